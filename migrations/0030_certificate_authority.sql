-- 0030_certificate_authority: the certificate authority of this Cairn
-- installation (controlplane/tls.c): made by the first cairnd that finds
-- none, shared through the database by every cairnd. Its key is sealed as
-- the engine passwords are, with cairnd's secret key.
CREATE TABLE certificate_authority (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    cert_pem   text NOT NULL,
    key_sealed bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
