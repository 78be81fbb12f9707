//! Bookings made by other router replicas, by origin: each origin (a replica's id) has its own
//! table of request id -> booking slot, so two replicas may use the same request id, and every
//! booking of one replica can be released at once when it goes silent.

use rustc_hash::FxHashMap;

/// Counters of the bookings other replicas announced. `booked == freed + expired + dropped + active`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemoteStats {
  pub booked: u64,
  pub freed: u64,
  pub expired: u64,
  /// Released because their replica went silent or asked for a reset (`drop_origin`).
  pub dropped: u64,
}

#[derive(Debug, Default)]
pub(super) struct Origins {
  ids: FxHashMap<Box<str>, usize>,
  names: Vec<Box<str>>,
  /// Per origin: request id -> booking slot.
  tables: Vec<FxHashMap<Box<str>, u32>>,
  free_ids: Vec<usize>,
}

impl Origins {
  pub fn table(&self, origin: &str) -> Option<&FxHashMap<Box<str>, u32>> {
    self.ids.get(origin).map(|&i| &self.tables[i])
  }

  pub fn table_mut(&mut self, origin: &str) -> Option<&mut FxHashMap<Box<str>, u32>> {
    self.ids.get(origin).map(|&i| &mut self.tables[i])
  }

  pub fn table_or_create(&mut self, origin: &str) -> &mut FxHashMap<Box<str>, u32> {
    let i = match self.ids.get(origin) {
      Some(&i) => i,
      None => {
        let i = match self.free_ids.pop() {
          Some(i) => {
            self.names[i] = origin.into();
            i
          }
          None => {
            self.names.push(origin.into());
            self.tables.push(FxHashMap::default());
            self.names.len() - 1
          }
        };
        self.ids.insert(origin.into(), i);
        i
      }
    };
    &mut self.tables[i]
  }

  /// Forgets the origin and hands back its bookings' slots.
  pub fn remove(&mut self, origin: &str) -> Vec<u32> {
    let Some(i) = self.ids.remove(origin) else { return Vec::new() };
    let slots = self.tables[i].drain().map(|(_, slot)| slot).collect();
    self.names[i] = "".into();
    self.free_ids.push(i);
    slots
  }

  /// Every table, for sweeps (expiry) that may remove entries.
  pub fn tables_mut(&mut self) -> impl Iterator<Item = &mut FxHashMap<Box<str>, u32>> {
    self.tables.iter_mut()
  }

  pub fn active(&self) -> usize {
    self.ids.values().map(|&i| self.tables[i].len()).sum()
  }

  /// (origin, bookings held) for every known origin, by name.
  pub fn counts(&self) -> Vec<(&str, usize)> {
    let mut out: Vec<(&str, usize)> = self.ids.iter().map(|(name, &i)| (&**name, self.tables[i].len())).collect();
    out.sort_unstable();
    out
  }
}
