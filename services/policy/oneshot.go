package policy

import "context"

// OneShot reads what WithOneShot marked ctx with: whether ctx is a
// one-shot command's (nobody is there to answer), and whether --yes was
// given. Other askers than the policy's rules (the agent approving a
// server's sampling request) answer the same way under it.
func OneShot(ctx context.Context) (yes, oneShot bool) {
	yes, oneShot = ctx.Value(oneShotKey{}).(bool)
	return yes, oneShot
}
