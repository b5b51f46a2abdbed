"""tf_tools.py -- Terraform with the official AWS provider from a local
filesystem mirror, pointed at cairnd's ElastiCache-compatible endpoint:
where the mirror is, a CLI config that installs only from it, and runs of
terraform in a working directory of a test's own."""

import glob
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "terraform" / "aws"
PROVIDER = "registry.terraform.io/hashicorp/aws"


def mirror():
    """The directory above registry.terraform.io that holds hashicorp/aws, or
    None. CAIRN_TF_MIRROR names it; else the usual places are looked at."""
    candidates = [os.environ.get("CAIRN_TF_MIRROR", "")]
    candidates += glob.glob("/opt/*") + ["/usr/share/terraform/plugins",
                                         "/usr/local/share/terraform/plugins",
                                         os.path.expanduser("~/.terraform.d/plugins")]
    for c in candidates:
        if c and glob.glob(f"{c}/{PROVIDER}/*/*/terraform-provider-aws*"):
            return c
    return None


def require():
    """(terraform binary, mirror), or skip saying what is missing."""
    tf = shutil.which("terraform")
    if tf is None:
        pytest.skip("terraform is not on the PATH")
    m = mirror()
    if m is None:
        pytest.skip("no local provider mirror holds hashicorp/aws (set CAIRN_TF_MIRROR to the "
                    "directory above registry.terraform.io)")
    return tf, m


class Workdir:
    """A copy of the .tf files of source (docs/terraform/aws) with its own CLI config
    and credentials."""

    def __init__(self, path, url, creds, source=EXAMPLE):
        self.tf, mirror_dir = require()
        self.path = Path(path)
        for f in Path(source).glob("*.tf"):
            shutil.copy(f, self.path)
        (self.path / "cli.tfrc").write_text(
            "provider_installation {\n"
            f"  filesystem_mirror {{\n    path    = \"{mirror_dir}\"\n"
            f"    include = [\"{PROVIDER}\"]\n  }}\n"
            f"  direct {{\n    exclude = [\"{PROVIDER}\"]\n  }}\n}}\n")
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "HOME": str(self.path), "TF_CLI_CONFIG_FILE": str(self.path / "cli.tfrc"),
                    "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1",
                    "AWS_ACCESS_KEY_ID": creds[0], "AWS_SECRET_ACCESS_KEY": creds[1],
                    "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
                    "TF_VAR_cairn_elasticache_endpoint": url}

    def run(self, *args, timeout=600):
        """terraform ARGS; (returncode, stdout, stderr, seconds)."""
        t = time.monotonic()
        r = subprocess.run([self.tf, f"-chdir={self.path}", *args, "-no-color"],
                           capture_output=True, text=True, env=self.env, timeout=timeout)
        return r.returncode, r.stdout, r.stderr, time.monotonic() - t

    def ok(self, *args, timeout=600):
        rc, out, err, secs = self.run(*args, timeout=timeout)
        assert rc == 0, f"terraform {' '.join(args)} exited {rc}:\n{out[-4000:]}\n{err[-4000:]}"
        return out, secs
