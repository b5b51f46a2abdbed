-- 0032_credential_changes: every cairnd keeps the credentials it verified
-- lately in memory (controlplane/http/token_cache.h); a change to one --
-- an API token revoked or expired early, an agent's credential replaced,
-- its host deleted -- is announced to all of them at once, so that none
-- trusts it a moment longer.
CREATE FUNCTION credential_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'api_tokens' THEN
        PERFORM pg_notify('cairn_credentials', OLD.id);
    ELSIF OLD.credential_id IS NOT NULL THEN
        PERFORM pg_notify('cairn_credentials', OLD.credential_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER api_tokens_credential_change
    AFTER UPDATE OF revoked_at, expires_at, scope, secret_hash, host_details OR DELETE
    ON api_tokens FOR EACH ROW EXECUTE FUNCTION credential_changed();

CREATE TRIGGER hosts_credential_change
    AFTER UPDATE OF credential_id, credential_hash OR DELETE
    ON hosts FOR EACH ROW EXECUTE FUNCTION credential_changed();
