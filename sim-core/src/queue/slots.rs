//! Liveness slots: which pending entries are still wanted.

use super::EventId;

const FREE: u64 = u64::MAX;

/// A slab of slots, each holding the sequence number of the live event that
/// owns it, or `FREE`. Slots are recycled through a free list, so the slab
/// is as large as the most events ever pending at once, not the number ever
/// scheduled.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    owner: Vec<u64>,
    free: Vec<u32>,
}

impl Slots {
    /// Takes a slot for the event with sequence `seq`.
    #[inline]
    pub(crate) fn take(&mut self, seq: u64) -> EventId {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.owner[slot as usize] = seq;
                slot
            }
            None => {
                let slot =
                    u32::try_from(self.owner.len()).expect("more than 4 billion pending events");
                self.owner.push(seq);
                slot
            }
        };
        EventId::new(slot, seq)
    }

    /// True while the event behind `id` is pending and not cancelled.
    #[inline]
    pub(crate) fn is_live(&self, id: EventId) -> bool {
        self.owner.get(id.slot as usize) == Some(&id.seq())
    }

    /// Starts loading `slot`'s owner, to be read soon (a hint).
    #[inline(always)]
    pub(crate) fn prefetch(&self, slot: u32) {
        if let Some(owner) = self.owner.get(slot as usize) {
            crate::prefetch::prefetch(owner);
        }
    }

    /// Frees the slot if `id` still owns it; `true` if it did.
    #[inline]
    pub(crate) fn release(&mut self, id: EventId) -> bool {
        if self.is_live(id) {
            self.owner[id.slot as usize] = FREE;
            self.free.push(id.slot);
            true
        } else {
            false
        }
    }
}
