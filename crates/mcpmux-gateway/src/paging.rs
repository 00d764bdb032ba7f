//! Pages of the lists served (`tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`), so a catalog of thousands of tools reaches a client in pieces it asked
//! for. A cursor names the list and where the next page starts, sealed with an HMAC-SHA256
//! under a key of this gateway's: a client cannot forge or alter one, nor bring one from
//! another list; such a cursor is refused with -32602. Each page is cut from the list as it is
//! when asked (a list that changed between pages may repeat or skip an item; the client was
//! told of the change by `list_changed`). Knows nothing of what the items are.
//!
//! The key is made at random when the gateway starts: cursors do not outlive it, and replicas
//! behind a balancer need session affinity for paging.

use aws_lc_rs::hmac;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::ErrorData;

/// Items per page unless `mcpmux serve --page-size` says otherwise: big enough that most
/// clients get everything at once, small enough that a 10 000-tool catalog comes in pages
/// (and one answer stays a few megabytes at most).
pub const DEFAULT_PAGE_SIZE: usize = 1000;

/// Longest cursor read; anything longer is not one of ours.
const MAX_CURSOR_LEN: usize = 200;

/// Cuts lists into pages and checks the cursors that ask for the next one.
pub struct Pager {
    key: hmac::Key,
    size: usize,
}

impl Pager {
    /// Pages of `size` items (at least 1), under a fresh random key.
    pub fn new(size: usize) -> Self {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).unwrap_or_else(|_| {
            // No system randomness: a key from this process's own random hasher state is
            // weaker but still unknown to clients.
            let seed: [u8; 32] = std::array::from_fn(|i| {
                use std::hash::{BuildHasher, Hasher};
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_usize(i);
                h.finish() as u8
            });
            hmac::Key::new(hmac::HMAC_SHA256, &seed)
        });
        Pager {
            key,
            size: size.max(1),
        }
    }

    /// The page of `items` (the whole list `list`) that `cursor` asks for (`None`: the
    /// first), and the cursor of the next page if there is one.
    pub fn page<T>(
        &self,
        list: &str,
        mut items: Vec<T>,
        cursor: Option<&str>,
    ) -> Result<(Vec<T>, Option<String>), ErrorData> {
        let start = match cursor {
            None => 0,
            Some(cursor) => self.open(list, cursor)?,
        };
        let end = start.saturating_add(self.size).min(items.len());
        let next = (end < items.len()).then(|| self.seal(list, end));
        items.truncate(end);
        let page = if start < items.len() {
            items.split_off(start)
        } else {
            // The list shrank since: nothing is left past the cursor.
            Vec::new()
        };
        Ok((page, next))
    }

    fn seal(&self, list: &str, offset: usize) -> String {
        let payload = format!("{list}:{offset}");
        let tag = hmac::sign(&self.key, payload.as_bytes());
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        )
    }

    /// Where `cursor` says the page of `list` starts, if it is one this gateway sealed for
    /// that list.
    fn open(&self, list: &str, cursor: &str) -> Result<usize, ErrorData> {
        let invalid = || {
            ErrorData::invalid_params(
                format!(
                    "invalid cursor for {list}: not one this gateway gave (cursors are opaque; \
                     list again from the start)"
                ),
                None,
            )
        };
        if cursor.len() > MAX_CURSOR_LEN {
            return Err(invalid());
        }
        let (payload, tag) = cursor.split_once('.').ok_or_else(invalid)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        // aws-lc-rs compares the tags in constant time.
        hmac::verify(&self.key, &payload, &tag).map_err(|_| invalid())?;
        let payload = String::from_utf8(payload).map_err(|_| invalid())?;
        let (named, offset) = payload.rsplit_once(':').ok_or_else(invalid)?;
        if named != list {
            return Err(invalid());
        }
        offset.parse().map_err(|_| invalid())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn pages_walk_the_list_to_its_end() {
        let pager = Pager::new(3);
        let items: Vec<u32> = (0..7).collect();
        let (first, next) = pager.page("tools", items.clone(), None).unwrap();
        assert_eq!(first, [0, 1, 2]);
        let (second, next) = pager.page("tools", items.clone(), next.as_deref()).unwrap();
        assert_eq!(second, [3, 4, 5]);
        let (last, next) = pager.page("tools", items, next.as_deref()).unwrap();
        assert_eq!(last, [6]);
        assert!(next.is_none());
    }

    #[test]
    fn forged_altered_and_foreign_cursors_are_refused() {
        let pager = Pager::new(2);
        let items: Vec<u32> = (0..5).collect();
        let (_, next) = pager.page("tools", items.clone(), None).unwrap();
        let next = next.unwrap();
        // Another list's cursor.
        assert!(pager.page("prompts", items.clone(), Some(&next)).is_err());
        // A forged offset with the old tag.
        let (_, tag) = next.split_once('.').unwrap();
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode("tools:4"));
        let refused = pager
            .page("tools", items.clone(), Some(&forged))
            .unwrap_err();
        assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        // Another gateway's.
        let other = Pager::new(2);
        assert!(other.page("tools", items.clone(), Some(&next)).is_err());
        for junk in ["", ".", "x.y", "page-2", &"a".repeat(500)] {
            assert!(
                pager.page("tools", items.clone(), Some(junk)).is_err(),
                "{junk}"
            );
        }
        // Its own, unaltered, still opens.
        assert_eq!(pager.page("tools", items, Some(&next)).unwrap().0, [2, 3]);
    }

    #[test]
    fn a_list_that_shrank_past_the_cursor_ends() {
        let pager = Pager::new(2);
        let (_, next) = pager.page("tools", vec![1, 2, 3, 4, 5], None).unwrap();
        let (_, next) = pager
            .page("tools", vec![1, 2, 3, 4, 5], next.as_deref())
            .unwrap();
        let (page, next) = pager.page("tools", vec![1, 2], next.as_deref()).unwrap();
        assert!(page.is_empty() && next.is_none());
    }
}
