export default function BulkPost() {
  return <p>Bulk posting is not built yet.</p>;
}
