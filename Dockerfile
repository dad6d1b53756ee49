FROM python:3.11-slim
WORKDIR /app
ENV PYTHONUNBUFFERED=1
# The GPU image passes a CUDA build here (TORCH_SPEC, split into pip arguments, e.g. "torch==2.13.0 --index-url
# https://download.pytorch.org/whl/cu128") and the extras it needs (EXTRAS="[gpu,s3]"); the defaults are the CPU build.
ARG TORCH_SPEC=torch==2.13.0
ARG EXTRAS=""
RUN pip install --no-cache-dir $TORCH_SPEC
COPY pyproject.toml README.md ./
COPY lab lab
COPY environments environments
COPY training training
RUN pip install --no-cache-dir -e ".$EXTRAS"
COPY . .
EXPOSE 8000
