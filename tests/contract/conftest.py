"""conftest.py -- what every contract test reads: the OpenAPI document."""

import pytest
import yaml

from binaries import SPEC_PATH


@pytest.fixture(scope="session")
def spec():
    """api/openapi.yaml, parsed."""
    with open(SPEC_PATH, encoding="utf-8") as f:
        return yaml.safe_load(f)
