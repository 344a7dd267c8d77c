import type { Metrics, SignInStage } from '../metrics.js';
import type { Events } from './emitter.js';

/** The counters that follow events: each sign-in step, and the tokens issued by grant type. */
export function countEvents(events: Events, { signIns, tokenGrants }: Metrics): void {
  const stages: SignInStage[] = ['started', 'authenticated', 'completed', 'denied', 'expired'];
  for (const stage of stages) events.on(`sign-in.${stage}`, () => void signIns.inc({ stage }));
  events.on('grant.issued', () => void tokenGrants.inc({ grant_type: 'authorization_code' }));
  events.on('grant.refreshed', () => void tokenGrants.inc({ grant_type: 'refresh_token' }));
}
