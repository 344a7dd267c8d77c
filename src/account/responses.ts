import { errorResponses } from '../routes/responses.js';

/** What every owner API call may answer besides its own (src/account/index.ts). */
export const OWNER_API_ERRORS = errorResponses({
  401: 'login_required: no live owner session',
  403: 'forbidden: a state change from another origin',
  415: 'invalid_request: a state change whose content type is not application/json',
});
