"""Other frameworks' entry points on assay: UiPath's Python API, MLflow's scorer names, pytest."""
