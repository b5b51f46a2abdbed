-- 0024_token_expiry: an API token may be made to expire (POST /v1/tokens
-- expires_in_days); past expires_at it opens nothing, as if revoked.
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
