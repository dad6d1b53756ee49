FROM python:3.11-slim
WORKDIR /app
ENV PYTHONUNBUFFERED=1
# The GPU image passes a CUDA build here (TORCH_SPEC); the default is the CPU wheel the tests use.
ARG TORCH_SPEC=torch==2.13.0
RUN pip install --no-cache-dir "$TORCH_SPEC"
COPY pyproject.toml README.md ./
COPY lab lab
COPY environments environments
COPY training training
RUN pip install --no-cache-dir -e .
COPY . .
EXPOSE 8000
