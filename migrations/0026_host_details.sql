-- 0026_host_details: which hosts a cluster runs on is the operator's
-- business. A read token sees clusters, their node endpoints (address and
-- port: how the cache is reached), events and calibrations without host
-- ids or names, and no event that is only about a host, unless it was
-- created with host_details. An admin token always sees them: it can list
-- the hosts anyway.
ALTER TABLE api_tokens ADD COLUMN host_details boolean NOT NULL DEFAULT false;
UPDATE api_tokens SET host_details = true WHERE scope = 'admin';
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_admin_host_details
    CHECK (scope <> 'admin' OR host_details);

-- j without the keys named, at any depth; arrays keep their order.
CREATE FUNCTION jsonb_without_keys(j jsonb, keys text[]) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    RETURN CASE jsonb_typeof(j)
        WHEN 'object' THEN coalesce((
            SELECT jsonb_object_agg(k, jsonb_without_keys(v, keys))
            FROM jsonb_each(j) AS e(k, v) WHERE k <> ALL (keys)), '{}'::jsonb)
        WHEN 'array' THEN coalesce((
            SELECT jsonb_agg(jsonb_without_keys(v, keys) ORDER BY o)
            FROM jsonb_array_elements(j) WITH ORDINALITY AS a(v, o)), '[]'::jsonb)
        ELSE j END;
END $$;

-- A document as a caller sees it: whole with host details, else without
-- the keys that name a host.
CREATE FUNCTION doc_for(doc jsonb, host_details boolean) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN host_details THEN doc
        ELSE jsonb_without_keys(doc, '{host_id,host_name}') END
$$;

-- Events keep their keys' order (json): tenant_doc is doc without the host,
-- for the callers without host details.
CREATE OR REPLACE VIEW event_documents AS
SELECT e.id, e.cluster_id, e.cluster_uid, e.host_id, e.created_at,
    json_build_object(
        'id', e.id::text, 'cluster_id', e.cluster_id, 'cluster_uid', e.cluster_uid,
        'host_id', e.host_id, 'operation_id', e.operation_id, 'type', e.type,
        'severity', e.severity, 'message', e.message, 'detail', e.detail,
        'created_at', api_time(e.created_at)) AS doc,
    json_build_object(
        'id', e.id::text, 'cluster_id', e.cluster_id, 'cluster_uid', e.cluster_uid,
        'operation_id', e.operation_id, 'type', e.type,
        'severity', e.severity, 'message', e.message,
        'detail', doc_for(e.detail, false),
        'created_at', api_time(e.created_at)) AS tenant_doc
FROM events e;

CREATE OR REPLACE VIEW calibration_documents AS
SELECT c.id, c.created_at,
    json_build_object(
        'id', c.id, 'status', o.status, 'step_name', o.step_name, 'progress', o.progress,
        'operation_id', c.operation_id, 'cluster_id', c.cluster_id,
        'host_id', c.host_id, 'host_name', c.host_name, 'node_type', c.node_type,
        'engine', c.engine, 'engine_version', c.engine_version,
        'parameters', json_build_object('value_bytes', c.value_bytes,
            'read_ratio', c.read_ratio, 'pipeline', c.pipeline, 'clients', c.clients,
            'duration_s', c.duration_s),
        'results', c.results, 'error', o.error,
        'created_at', api_time(c.created_at), 'finished_at', api_time(o.finished_at)) AS doc,
    json_build_object(
        'id', c.id, 'status', o.status, 'step_name', o.step_name, 'progress', o.progress,
        'operation_id', c.operation_id, 'cluster_id', c.cluster_id,
        'node_type', c.node_type, 'engine', c.engine, 'engine_version', c.engine_version,
        'parameters', json_build_object('value_bytes', c.value_bytes,
            'read_ratio', c.read_ratio, 'pipeline', c.pipeline, 'clients', c.clients,
            'duration_s', c.duration_s),
        'results', c.results, 'error', o.error,
        'created_at', api_time(c.created_at), 'finished_at', api_time(o.finished_at))
        AS tenant_doc
FROM calibrations c JOIN operations o ON o.id = c.operation_id;
