//! Where each call's progress goes, by its token: the call's route once it has one, else the
//! steps read before then. rmcp numbers a request as it queues it for its session task and
//! tells the caller its token only afterwards, so a fast server's first steps can be read
//! before the call has added its route. The tap (`progress_tap.rs`) marks each tool call's
//! token as the request is written; steps for a marked token wait here for the route, a
//! bounded few, and reach it the moment it is added. Knows nothing of transports.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use tokio::sync::{Notify, mpsc};

use crate::call_options::Progress;

/// At most this many steps wait for one call's route; later ones are dropped, and logged.
const EARLY_STEPS: usize = 64;

/// At most this many calls have steps waiting; a call marked beyond them has its early steps
/// left to rmcp, which drops them.
const EARLY_CALLS: usize = 256;

/// Where the progress of one call goes: the caller's channel, if it asked for progress, and
/// the call's deadline, which every notification extends.
pub(crate) struct Route {
    pub tx: Option<mpsc::UnboundedSender<Progress>>,
    pub bump: Arc<Notify>,
}

impl Route {
    fn pass(&self, step: Progress) {
        self.bump.notify_one();
        if let Some(tx) = &self.tx {
            let _ = tx.send(step);
        }
    }
}

/// One token's place: its call's route, or the steps read before the route was added.
enum Slot {
    Routed(Route),
    Early(Vec<Progress>),
}

#[derive(Default)]
struct Slots {
    by_token: HashMap<ProgressToken, Slot>,
    /// How many slots are `Early`.
    early: usize,
}

impl Slots {
    /// Removes `token`'s slot if `remove` says so, counting early slots.
    fn remove_if(&mut self, token: &ProgressToken, remove: impl Fn(&Slot) -> bool) -> Option<Slot> {
        if !self.by_token.get(token).is_some_and(&remove) {
            return None;
        }
        let slot = self.by_token.remove(token)?;
        if matches!(slot, Slot::Early(_)) {
            self.early -= 1;
        }
        Some(slot)
    }
}

/// Routes progress notifications to the call that owns the token.
#[derive(Clone, Default)]
pub(crate) struct ProgressRoutes(Arc<Mutex<Slots>>);

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        crate::sync::lock(&self.0)
    }

    /// Routes `token`'s progress to `route`, first the steps that were read before it.
    pub(crate) fn add(&self, token: ProgressToken, route: Route) {
        let mut slots = self.lock();
        if let Some(Slot::Early(steps)) = slots.remove_if(&token, |_| true) {
            for step in steps {
                route.pass(step);
            }
        }
        slots.by_token.insert(token, Slot::Routed(route));
    }

    /// The call of `token` has ended: its progress goes nowhere now.
    pub(crate) fn remove(&self, token: &ProgressToken) {
        self.lock().remove_if(token, |_| true);
    }

    /// A request with `token` is being written: until its call adds a route, its steps wait
    /// here. False when it needs no slot (its route is there already) or may not have one.
    pub(super) fn expect(&self, token: &ProgressToken) -> bool {
        let mut slots = self.lock();
        if slots.by_token.contains_key(token) || slots.early >= EARLY_CALLS {
            return false;
        }
        slots
            .by_token
            .insert(token.clone(), Slot::Early(Vec::new()));
        slots.early += 1;
        true
    }

    /// The request with `token` was cancelled before its call added a route, so none will
    /// come: its steps stop waiting.
    pub(super) fn unexpect(&self, token: &ProgressToken) {
        self.lock()
            .remove_if(token, |slot| matches!(slot, Slot::Early(_)));
    }

    /// Hands a progress step to the call that owns its token, or keeps it for the call's route
    /// to come; false when no call does.
    pub(super) fn deliver(&self, params: &ProgressNotificationParam) -> bool {
        let step = || Progress {
            progress: params.progress,
            total: params.total,
            message: params.message.clone(),
        };
        match self.lock().by_token.get_mut(&params.progress_token) {
            Some(Slot::Routed(route)) => route.pass(step()),
            Some(Slot::Early(steps)) if steps.len() < EARLY_STEPS => steps.push(step()),
            Some(Slot::Early(_)) => tracing::debug!(
                token = ?params.progress_token,
                "a progress step before its call's route, beyond the {EARLY_STEPS} kept: dropped"
            ),
            None => return false,
        }
        true
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(super) mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    /// A numbered progress token.
    pub(in crate::connection) fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    fn step(n: i64, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(token(n), progress)
    }

    /// A route to a channel, and the channel's other end.
    pub(in crate::connection) fn route() -> (Route, mpsc::UnboundedReceiver<Progress>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let route = Route {
            tx: Some(tx),
            bump: Arc::new(Notify::new()),
        };
        (route, rx)
    }

    /// The steps a route's channel holds now.
    pub(in crate::connection) fn received(rx: &mut mpsc::UnboundedReceiver<Progress>) -> Vec<f64> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|step| step.progress)
            .collect()
    }

    #[test]
    fn steps_read_before_the_route_reach_it_first_and_in_order() {
        let routes = ProgressRoutes::default();
        assert!(routes.expect(&token(7)));
        assert!(routes.deliver(&step(7, 1.0)));
        assert!(routes.deliver(&step(7, 2.0)));
        let (route, mut rx) = route();
        routes.add(token(7), route);
        assert!(routes.deliver(&step(7, 3.0)));
        assert_eq!(received(&mut rx), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn a_token_no_call_wrote_or_whose_request_is_over_is_left_to_rmcp() {
        let routes = ProgressRoutes::default();
        assert!(!routes.deliver(&step(1, 1.0)), "never written");
        assert!(routes.expect(&token(2)));
        assert!(routes.deliver(&step(2, 1.0)));
        routes.unexpect(&token(2));
        assert!(!routes.deliver(&step(2, 2.0)), "cancelled without a route");
        let (route, mut rx) = route();
        routes.add(token(3), route);
        routes.remove(&token(3));
        assert!(!routes.deliver(&step(3, 1.0)), "its call ended");
        assert!(received(&mut rx).is_empty());
    }

    #[test]
    fn marking_a_routed_token_or_answering_it_leaves_its_route() {
        let routes = ProgressRoutes::default();
        let (route, mut rx) = route();
        routes.add(token(4), route);
        assert!(!routes.expect(&token(4)));
        routes.unexpect(&token(4));
        assert!(routes.deliver(&step(4, 1.0)));
        assert_eq!(received(&mut rx), [1.0]);
    }

    #[test]
    fn early_steps_and_early_calls_are_bounded() {
        let routes = ProgressRoutes::default();
        assert!(routes.expect(&token(0)));
        for n in 0..EARLY_STEPS + 10 {
            assert!(routes.deliver(&step(0, n as f64)));
        }
        let (route, mut rx) = route();
        routes.add(token(0), route);
        let kept = received(&mut rx);
        assert_eq!(kept.len(), EARLY_STEPS);
        assert_eq!(kept.last(), Some(&((EARLY_STEPS - 1) as f64)));

        for n in 1..=EARLY_CALLS as i64 {
            assert!(routes.expect(&token(n)));
        }
        assert!(!routes.expect(&token(-1)), "one call more than kept");
        routes.unexpect(&token(1));
        assert!(routes.expect(&token(-1)), "room again once one is answered");
    }
}
