"""The Connexity family: case gates from expected outcomes, a run's two dimensions, and a
comparison of runs that knows noise (verdict thresholds, paired significance, config diffs,
named baselines).

``policy`` decides a case's verdict and a run's dimensions under ``scoring: connexity``;
``compare`` compares two stored runs (``assay compare``, :func:`assay.compare` and the REST
endpoint all call :func:`assay.connexity.compare.compare`); ``diff`` says what changed
between two runs' snapshots. The judge itself is an evaluator, in
:mod:`assay.judges.connexity`, and conversations are run by :mod:`assay.conversation`.
"""
