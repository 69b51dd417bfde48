/**
 * `/post/bulk`: bulk posting (web/src/bulk/). Loaded on first visit of the page only: it brings the SDK's posting
 * engine, ethers and the brief encryption, which the other pages do not need (bench:web's first-load budget).
 */
import { lazy, Suspense } from "react";
import { Loading } from "../ui";

const BulkPage = lazy(() => import("../bulk/BulkPage"));

export default function BulkPost() {
  return (
    <Suspense fallback={<Loading what="the bulk posting page" />}>
      <BulkPage />
    </Suspense>
  );
}
