/**
 * The base error of mufold's adapters, KafkaJS-style: it says whether a retry
 * can help and carries its cause.
 */
export class MufoldError extends Error {
  readonly retriable: boolean;
  constructor(message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.retriable = options.retriable ?? false;
  }
}
