/**
 * Live status: the account's events (GET /api/v1/events/stream, read with fetch and the session token through the
 * SDK's `streamEvents`, which reconnects from the last event seen). The stream stops when the page unmounts.
 */
import { useEffect, useRef } from "react";
import { eventPage, streamEvents } from "../../sdk/src/events";

/**
 * Calls `onEvent` for each event from now on about one of `taskHashes`, while `token` is set and the list is not
 * empty, and once when the stream starts: the log's head is read first and `onEvent` called, so an event between the
 * page's load and the stream's start reloads the page too instead of being missed. A refused stream (a revoked
 * session) just ends.
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
        const baseUrl = window.location.origin;
        // The head failing to load (the network) leaves the stream to start from "now", as it retries on its own.
        const head = await eventPage({ baseUrl, sessionToken: token, after: "now", limit: 1 }).then(
          (page) => page.next,
          () => "now",
        );
        if (controller.signal.aborted) return;
        if (head !== "now") callback.current(); // whatever happened between the page's load and the head
        for await (const event of streamEvents({ baseUrl, sessionToken: token, after: head, signal: controller.signal })) {
          if (event.taskHash && wanted.has(event.taskHash.toLowerCase())) callback.current();
        }
      } catch {
        // The stream was refused for good (INVALID_TOKEN...): the page still shows what it loaded.
      }
    })();
    return () => controller.abort();
  }, [token, key]);
}
