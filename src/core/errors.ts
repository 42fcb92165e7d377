/**
 * Errors of the contract. Messages are the reference's own words, so a
 * reader comparing mufold with the reference sees the same reason.
 */

/** A contract violation; Python raises `ValueError` with the same message. */
export class ContractError extends Error {
  override name = "ValueError";
}

/** An observation failed validation; carries the reference's typed reason code. */
export class ObservationValidationError extends ContractError {
  constructor(
    readonly reasonCode: string,
    message: string,
  ) {
    super(message);
  }
}

export function fail(message: string): never {
  throw new ContractError(message);
}
