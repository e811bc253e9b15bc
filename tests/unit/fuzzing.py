"""What the fuzz suites share: hypothesis settings and integer and text strategies.

The ``quiet_logs`` fixture they use (``pytest.mark.usefixtures``) is in ``tests/unit/conftest.py``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

INT64 = st.integers(-(2**63), 2**63 - 1)
UINT32 = st.integers(0, 2**32 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
CHARS = st.characters(codec="utf-8")

FUZZ = settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        # the gateway suite's harness fixture resets its tables itself for every example
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
