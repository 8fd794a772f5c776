"""Textual entailment with decomposable attention (Parikh et al., 2016)."""
