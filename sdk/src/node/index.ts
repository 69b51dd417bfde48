/**
 * Node-only helpers of the SDK's package, for the `market` command's files and the programs that share its lock
 * convention (the API server's SQLite lock, `npm start`'s state folder). Not exported by the SDK's index: a browser
 * build never loads `node:fs`.
 */
export { lockPidFile } from "./pid-lock";
