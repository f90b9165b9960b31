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

# Dependencies change less often than the code: install them in their own layer first.
COPY pyproject.toml README.md ./
RUN mkdir -p leaderboard workers service joust \
    && touch leaderboard/__init__.py workers/__init__.py service/__init__.py joust/__init__.py \
    && case ",${JOUST_EXTRAS}," in *,factsim,*) pip install torch==2.13.0 --index-url "${TORCH_INDEX}";; esac \
    && pip install ".[${JOUST_EXTRAS}]" \
    && pip uninstall -y joust

COPY leaderboard ./leaderboard
COPY workers ./workers
COPY service ./service
COPY joust ./joust
RUN pip install --no-deps . \
    && useradd --system --create-home --uid 10001 joust \
    && mkdir -p /data \
    && chown joust:joust /data \
    && chmod 0700 /data

USER joust
VOLUME ["/data"]
EXPOSE 8000

CMD ["joust", "api", "--host", "0.0.0.0", "--port", "8000"]
