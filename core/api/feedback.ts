import { Type, type Static } from "@sinclair/typebox";
import { Address, TaskHashText } from "./common";

/** POST /api/v1/a2a/tasks/{taskHash}/review. */
export const ReviewBody = Type.Object(
  { rating: Type.Integer({ minimum: 1, maximum: 5 }), comment: Type.Optional(Type.String({ maxLength: 2000 })) },
  { additionalProperties: false },
);
export const Reviewed = Type.Object({ taskHash: TaskHashText, agent: Address, rating: Type.Integer() });
export type Reviewed = Static<typeof Reviewed>;

/** GET /api/v1/reputation/{address}/reviews. */
export const Reviews = Type.Object({
  reviews: Type.Array(
    Type.Object({
      taskHash: TaskHashText,
      poster: Address,
      rating: Type.Integer(),
      comment: Type.Union([Type.String(), Type.Null()]),
      createdAt: Type.Integer(),
    }),
  ),
  averageRating: Type.Union([Type.Number(), Type.Null()]),
});
export type Reviews = Static<typeof Reviews>;

/** A message between a task's poster and its worker. */
export const TaskMessage = Type.Object({ id: Type.Integer(), sender: Address, body: Type.String(), createdAt: Type.Integer() });
export type TaskMessage = Static<typeof TaskMessage>;
export const TaskMessageBody = Type.Object({ body: Type.String({ minLength: 1, maxLength: 4000 }) }, { additionalProperties: false });
export const TaskMessages = Type.Object({ messages: Type.Array(TaskMessage) });
export type TaskMessages = Static<typeof TaskMessages>;
