# joust: one image for every process (api, worker, scheduler); docker-compose.yml picks the command.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    JOUST_DATA_DIR=/data

WORKDIR /app

# Extras to install: "postgres" by default; "postgres,factsim" for the factsim criteria set,
# which needs torch: its CPU build is installed first from TORCH_INDEX (with no torch present,
# sentence-transformers would pull a CUDA build of several GB).
ARG JOUST_EXTRAS=postgres
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# uv at the version the lock was written with (scripts/uv), only to read the lock.
ARG UV_VERSION=0.13.9

# Dependencies change less often than the code: install them in their own layer first, at the
# versions of uv.lock (the ones the suite passed on) and checked against its hashes, so that an
# image built next month runs what was tested, not that day's releases.
COPY pyproject.toml uv.lock README.md ./
RUN pip install "uv==${UV_VERSION}" \
    && uv export --locked --no-emit-project --format requirements-txt --no-emit-package torch \
       $(printf -- '--extra %s ' $(echo "${JOUST_EXTRAS}" | tr ',' ' ')) > /tmp/requirements.txt \
    && case ",${JOUST_EXTRAS}," in *,factsim,*) pip install torch==2.13.0 --index-url "${TORCH_INDEX}";; esac \
    && pip install --require-hashes --no-deps -r /tmp/requirements.txt \
    && pip uninstall -y uv && rm /tmp/requirements.txt

COPY leaderboard ./leaderboard
COPY workers ./workers
COPY service ./service
COPY joust ./joust
RUN pip install --no-deps . \
    && pip check \
    && useradd --system --create-home --uid 10001 joust \
    && mkdir -p /data \
    && chown joust:joust /data \
    && chmod 0700 /data

USER joust
VOLUME ["/data"]
EXPOSE 8000

CMD ["joust", "api", "--host", "0.0.0.0", "--port", "8000"]
