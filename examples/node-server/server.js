// A server not written in Python, for `benchlab tune --command` (docs/tune.md): Node's own
// http module, its worker processes forked by Node's cluster, its port from $PORT (as most
// platforms' servers read it). GET /work?ms=N spends N ms of CPU before it answers; any
// other path answers at once.
//
//   benchlab tune --command 'node server.js --workers {workers}' --grid workers=1,2 \
//       --request 'GET /work?ms=2' --check-body done
"use strict";
const cluster = require("node:cluster");
const http = require("node:http");

const flag = process.argv.indexOf("--workers");
const workers = flag > 0 ? Number(process.argv[flag + 1]) : 1;
const port = Number(process.env.PORT || 8000);

function busy(ms) {
  const end = process.cpuUsage().user + ms * 1000;
  while (process.cpuUsage().user < end) {
    // CPU, not waiting: a request of known cost
  }
}

if (cluster.isPrimary && workers > 1) {
  for (let i = 0; i < workers; i += 1) cluster.fork();
  process.on("SIGTERM", () => {
    for (const worker of Object.values(cluster.workers)) worker.kill("SIGTERM");
    process.exit(0);
  });
} else {
  http
    .createServer((request, response) => {
      const url = new URL(request.url, "http://localhost");
      if (url.pathname === "/work") busy(Number(url.searchParams.get("ms") || 1));
      response.writeHead(200, { "Content-Type": "text/plain", "Content-Length": 4 });
      response.end("done");
    })
    .listen(port, process.env.HOST || "0.0.0.0");
  process.on("SIGTERM", () => process.exit(0));
}
