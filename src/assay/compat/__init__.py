"""Other evaluation frameworks' Python APIs, answered by assay.

Code written for another framework runs on assay with only its imports changed:
``from uipath.eval.evaluators import X`` becomes ``from assay.compat.uipath.evaluators import X``
(see :mod:`assay.compat.uipath`). The classes keep the other framework's names, arguments and
result shapes; the judging underneath is assay's own evaluators and judge engine.
"""
