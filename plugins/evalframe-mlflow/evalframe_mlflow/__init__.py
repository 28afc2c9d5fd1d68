"""evalframe-mlflow: log evalframe runs to MLflow."""
