import type { Metrics, SignInStage } from '../metrics.js';
import type { Events } from './emitter.js';

/** The counters that follow events: each sign-in step, the owners' approvals, the tokens issued by grant type, logout deliveries. */
export function countEvents(events: Events, { signIns, ownerApprovals, tokenGrants, logoutDeliveries }: Metrics): void {
  const stages: SignInStage[] = ['started', 'authenticated', 'completed', 'denied', 'expired'];
  for (const stage of stages) events.on(`sign-in.${stage}`, () => void signIns.inc({ stage }));
  events.on('sign-in.approval_requested', () => void ownerApprovals.inc({ outcome: 'requested' }));
  events.on('sign-in.approved', () => void ownerApprovals.inc({ outcome: 'approved' }));
  events.on('sign-in.denied', ({ by }) => {
    if (by === 'owner') ownerApprovals.inc({ outcome: 'denied' });
  });
  events.on('sign-in.expired', ({ awaiting_owner }) => {
    if (awaiting_owner) ownerApprovals.inc({ outcome: 'expired' });
  });
  events.on('grant.issued', () => void tokenGrants.inc({ grant_type: 'authorization_code' }));
  events.on('grant.refreshed', () => void tokenGrants.inc({ grant_type: 'refresh_token' }));
  events.on('logout.delivered', () => void logoutDeliveries.inc({ result: 'delivered' }));
  events.on('logout.refused', ({ given_up }) => void logoutDeliveries.inc({ result: given_up ? 'failed' : 'retried' }));
}
