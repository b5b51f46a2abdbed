-- 0013_token_secret: an API token can sign requests the way the AWS tools
-- do (Signature Version 4, the ElastiCache-compatible endpoint), which needs
-- the secret itself on the verifying side, not only its hash. It is kept
-- sealed (AES-256-GCM) with cairnd's --secret-key-file, as engine passwords
-- are; tokens made before this, or by a cairnd without the key, have none
-- and sign in with Bearer only.
ALTER TABLE api_tokens ADD COLUMN secret_sealed bytea;
