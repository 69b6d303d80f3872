# browser-agent in a container: the live demo ("browser-agent serve") on port 8080, with Debian's
# Chromium and the pinned npm Playwright driver, as a non-root user.
#
# It installs what scripts/setup installs, from the same places (Debian packages, the npm registry,
# the Go module proxy), and no browser is downloaded:
#   scripts/setup step 1  apt-get install            -> run stage: chromium-headless-shell (+ fonts-liberation,
#                         chromium-headless-shell       which setup gets through chromium-common's
#                                                      Recommends; pages need a font to be drawn)
#   scripts/setup step 2  npm ci in driver/          -> driver stage: npm ci of driver/package-lock.json
#   scripts/setup step 3  driver/package, driver/node -> run stage: the same two links
#   scripts/setup step 4  pageError.location guard   -> driver stage: the same sed
#   scripts/setup step 5  go mod download            -> build stage
# Only curl (the health check) and ca-certificates are extra.
#
#   docker build -t browser-agent .
#   docker run --rm -p 127.0.0.1:8080:8080 -v browser-agent-state:/home/agent/.local/state/browser-agent browser-agent
#   docker run --rm browser-agent run --preset lookup      # one run, offline planner
#
# Behind a reverse proxy, believe its X-Forwarded-For with --trusted-proxy (its address or subnet):
#   docker run ... browser-agent serve --addr 0.0.0.0:8080 --trusted-proxy 172.18.0.0/16
# The spend ledger lives in the audit database under /home/agent/.local/state/browser-agent; keep
# it on a volume, or the day's spend starts again at $0 with every new container.

# --- build: the Go binaries, with cgo for SQLite ---
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -o /out/browser-agent ./cmd/browser-agent \
 && CGO_ENABLED=1 go build -trimpath -o /out/demo-site ./cmd/demo-site

# --- driver: playwright-core from the npm registry, pinned by package-lock.json ---
FROM node:20-bookworm-slim AS driver
WORKDIR /driver
COPY driver/package.json driver/package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
 && sed -i -e 's/pageError\.location\.url/pageError.location?.url || ""/g' \
           -e 's/pageError\.location\.lineNumber/pageError.location?.lineNumber || 0/g' \
           -e 's/pageError\.location\.columnNumber/pageError.location?.columnNumber || 0/g' \
           node_modules/playwright-core/lib/coreBundle.js \
 && ! grep -q 'pageError\.location\.\(url\|lineNumber\|columnNumber\)' node_modules/playwright-core/lib/coreBundle.js

# --- run: Debian slim with Debian's chromium-headless-shell ---
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium-headless-shell fonts-liberation ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
COPY --from=driver /usr/local/bin/node /usr/local/bin/node
COPY --from=driver /driver/node_modules /usr/lib/browser-agent/driver/node_modules
RUN ln -s node_modules/playwright-core /usr/lib/browser-agent/driver/package \
 && ln -s /usr/local/bin/node /usr/lib/browser-agent/driver/node \
 && /usr/lib/browser-agent/driver/node /usr/lib/browser-agent/driver/package/cli.js --version
COPY --from=build /out/browser-agent /out/demo-site /usr/local/bin/
RUN useradd --create-home --uid 10001 agent \
 && install -d -o agent -g agent -m 0700 /home/agent/.local /home/agent/.local/state /home/agent/.local/state/browser-agent
USER agent
WORKDIR /home/agent
ENV BROWSER_AGENT_DRIVER_DIR=/usr/lib/browser-agent/driver \
    BROWSER_AGENT_CHROMIUM=/usr/lib/chromium/chromium-headless-shell \
    BROWSER_AGENT_DB=/home/agent/.local/state/browser-agent/audit.db
VOLUME ["/home/agent/.local/state/browser-agent"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS --max-time 4 http://127.0.0.1:8080/api/health > /dev/null || exit 1
ENTRYPOINT ["browser-agent"]
CMD ["serve", "--addr", "0.0.0.0:8080"]
