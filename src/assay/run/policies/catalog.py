"""Which module defines each built-in scoring policy: a run imports only its own.

Pure data, with no imports; ``tests/test_policies.py`` checks it against what importing every
policy module registers.
"""

MODULES: dict[str, str] = {
    "connexity": "assay.run.policies.connexity",
    "databricks": "assay.run.policies.databricks.policy",
    "default": "assay.run.policies.default",
}
