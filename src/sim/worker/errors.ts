// OpenAI-style errors of the simulated worker: {"error":{"message","type","code"}} with a status.

export class OpenAiError extends Error {
  override name = 'OpenAiError';
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly code: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const invalidRequest = (message: string, code = 'invalid_value') => new OpenAiError(400, message, 'invalid_request_error', code);

export function errorJson(err: OpenAiError): string {
  return JSON.stringify({ error: { message: err.message, type: err.type, code: err.code } });
}
