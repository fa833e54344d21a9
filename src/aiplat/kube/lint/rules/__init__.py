"""The lint rules, one module per family of mistakes (``aiplat.kube.lint`` runs them)."""
