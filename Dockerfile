# hatch in a container: web host on 3100, companion (terminal WebSocket) on 3101.
FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap bash ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
ENV HATCH_HOST=0.0.0.0 \
    HATCH_DATA_DIR=/data \
    HATCH_IN_CONTAINER=1
VOLUME /data
EXPOSE 3100 3101
# tini as PID 1: it reaps what sessions orphan (`(cmd &)`) and passes `docker stop`'s SIGTERM on to npm,
# whose script execs hatch, so hatch ends every session before the container goes.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["npm", "start"]
