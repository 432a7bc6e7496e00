"""The trunk: evaluate, score, resume and rescore, calibrate; the runner and policies."""
