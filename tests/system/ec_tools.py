"""ec_tools.py -- the AWS tools pointed at cairnd's ElastiCache-compatible
endpoint: credentials from a Cairn API token, a boto3 client, aws-cli runs,
and the skip messages when a tool is missing."""

import json
import os
import shutil
import subprocess

import pytest

REGION = "us-east-1"


def credentials(api, scope="admin", name=None):
    """A new API token of scope, as (access key id, secret access key)."""
    r = api.post("/v1/tokens", json={"name": name or f"aws-{scope}", "scope": scope})
    assert r.status_code == 201, r.text
    body = r.json()
    return body["access_key_id"], body["secret_access_key"]


def boto3_client(url, creds, **config):
    """A boto3 ElastiCache client on url signing with creds; no retries, so a
    refusal is seen as it is."""
    boto3 = pytest.importorskip("boto3", reason="python3-boto3 is not installed")
    from botocore.config import Config
    return boto3.client("elasticache", endpoint_url=url, region_name=REGION,
                        aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
                        config=Config(retries={"max_attempts": 1}, **config))


def aws_binary():
    """Debian's aws-cli (v2), else whatever `aws` the PATH has; skip without."""
    for path in ("/usr/bin/aws", shutil.which("aws")):
        if path and os.access(path, os.X_OK):
            return path
    pytest.skip("aws-cli is not installed (Debian package awscli)")


def aws(url, creds, *args, timeout=60):
    """Run `aws elasticache ARGS --endpoint-url url`; (returncode, parsed JSON
    or None, stderr)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
           "AWS_ACCESS_KEY_ID": creds[0], "AWS_SECRET_ACCESS_KEY": creds[1],
           "AWS_DEFAULT_REGION": REGION, "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_PAGER": "",
           "AWS_MAX_ATTEMPTS": "1"}
    r = subprocess.run([aws_binary(), "elasticache", *args, "--endpoint-url", url,
                        "--output", "json"], capture_output=True, text=True, env=env,
                       timeout=timeout)
    out = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None
    return r.returncode, out, r.stderr
