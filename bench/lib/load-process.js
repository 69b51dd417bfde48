"use strict";
/**
 * The load generator of bench/lib/api-load.ts, run as a process of its own: autocannon in this process's main thread
 * (no worker threads), every answer checked by bench/api-verify-body.js, the result printed as one line of JSON.
 * Plain JavaScript: it starts in tens of milliseconds, without ts-node.
 *
 * Why a process and not autocannon's `workers` option: each run with `workers` started a worker thread in the bench's
 * process and ended it, and on Node 20 ending such a thread sometimes aborted the whole bench in V8's teardown of the
 * thread's heap (`free(): invalid pointer`, `free(): invalid next size (fast)`, `corrupted size vs. prev_size`, from
 * node::worker::Worker::Run -> Isolate::Delete -> Heap::TearDown -> Page::ReleaseFreeListCategories in a core dump).
 * A process ends without tearing an isolate down under a running one, and still keeps the load off the API's thread.
 *   node bench/lib/load-process.js '{"url": ..., "headers": {...}, "seconds": 10, "connections": 10}'
 */
const path = require("node:path");
const autocannon = require("autocannon");
const verifyBody = require(path.join(__dirname, "..", "api-verify-body.js"));

const { url, headers, seconds, connections } = JSON.parse(process.argv[2]);
autocannon({ url, connections, duration: seconds, headers, verifyBody }, (error, result) => {
  if (error) {
    process.stderr.write(`${error.stack ?? error}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write(
    `${JSON.stringify({
      reqPerSec: Math.round(result.requests.average),
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      maxMs: result.latency.max,
      requests: result.requests.total,
      non2xx: result.non2xx,
      mismatches: result.mismatches,
      errors: result.errors,
      timeouts: result.timeouts,
      mbPerSec: Math.round((result.throughput.average / 1e6) * 10) / 10,
    })}\n`,
  );
});
