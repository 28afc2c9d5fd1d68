"""Hydra config groups shipped by evalframe-mlflow."""
