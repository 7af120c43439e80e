# electra-tf: the pinned requirements and the project; runs the pre-training demo.
#
#   docker build -t electra-tf .
#   docker run --rm -v "$PWD/runs:/app/runs" electra-tf            # CPU demo
#   docker run --rm --gpus all -v "$PWD/runs:/app/runs" electra-tf \
#       python pretrain/run.py --preset small --strategy mirrored --precision mixed_float16 ...
#
# For GPUs build with `--build-arg TF_PACKAGE="tensorflow[and-cuda]==2.21.0"`, which pulls
# the CUDA libraries from PyPI (the host needs only the NVIDIA driver and
# nvidia-container-toolkit). See docs/distribution.md for Cloud TPU VMs.
FROM python:3.11-slim

ARG TF_PACKAGE=""
WORKDIR /app
# requirements.txt installs the project itself (-e .): its sources come first.
COPY requirements.txt pyproject.toml ./
COPY electra_tf electra_tf
RUN pip install --no-cache-dir -r requirements.txt \
    && if [ -n "$TF_PACKAGE" ]; then pip install --no-cache-dir "$TF_PACKAGE"; fi
COPY pretrain pretrain
COPY finetune finetune
ENV TF_CPP_MIN_LOG_LEVEL=2
CMD ["python", "pretrain/run.py"]
