import { expect } from "chai";
import type { Answer } from "./harness";
import { ERROR_CODES, type ErrorCode } from "@market/core/errors";

/** The answer is the error envelope with this code and the status the code table gives it. */
export function expectError(answer: Answer, code: ErrorCode, status: number = ERROR_CODES[code].status) {
  expect(answer.body, JSON.stringify(answer.body)).to.have.property("success", false);
  expect(answer.body.error.code, answer.body.error.message).to.equal(code);
  expect(answer.status).to.equal(status);
}

export function expectOk<T>(answer: Answer<T>): T {
  expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
  expect(answer.body.success).to.equal(true);
  return answer.body.data;
}
