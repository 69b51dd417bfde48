"use strict";
/**
 * autocannon `verifyBody` for bench/api.ts (plain JavaScript: it runs in the load process, bench/lib/load-process.js). A browse answer
 * must carry exactly 100 tasks; a whoami answer exactly one address. Counting keys is enough and keeps the load
 * generator cheap; bench/api.ts parses a sample of answers in full before the runs.
 */
const BROWSE_PAGE = 100;

module.exports = function verifyBody(body) {
  if (body.startsWith('{"success":true,"data":{"tasks":')) return count(body, '"taskId":') === BROWSE_PAGE;
  if (body.startsWith('{"success":true,"data":{"addresses":')) return /"addresses":\["0x[0-9a-fA-F]{40}"\]/.test(body);
  return false;
};

function count(text, needle) {
  let n = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) n++;
  return n;
}
