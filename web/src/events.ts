/**
 * Live status: the account's events (GET /api/v1/events/stream, read with fetch and the session token through the
 * SDK's `streamEvents`, which reconnects from the last event seen). The stream stops when the page unmounts.
 */
import { useEffect, useRef } from "react";
import { streamEvents } from "../../sdk/src/events";

/**
 * Calls `onEvent` for each event from now on about one of `taskHashes`, while `token` is set and the list is not
 * empty. A refused stream (a revoked session) just ends.
 */
export function useTaskEvents(token: string | undefined, taskHashes: readonly string[], onEvent: () => void) {
  const callback = useRef(onEvent);
  callback.current = onEvent;
  const key = taskHashes.join(",");
  useEffect(() => {
    if (!token || !key) return;
    const controller = new AbortController();
    const wanted = new Set(key.split(",").map((h) => h.toLowerCase()));
    void (async () => {
      try {
        for await (const event of streamEvents({ baseUrl: window.location.origin, sessionToken: token, after: "now", signal: controller.signal })) {
          if (event.taskHash && wanted.has(event.taskHash.toLowerCase())) callback.current();
        }
      } catch {
        // The stream was refused for good (INVALID_TOKEN...): the page still shows what it loaded.
      }
    })();
    return () => controller.abort();
  }, [token, key]);
}
