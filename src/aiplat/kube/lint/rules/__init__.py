"""The lint rules, one module per family of mistakes. ``aiplat.kube.lint.rules()`` imports
every module here without a list, so a new module is a new family; each registers its rules
with ``@rule`` and imports only ``aiplat.kube.lint.base`` and ``aiplat.kube.lint.objects``
(the import contracts in pyproject.toml hold it)."""
