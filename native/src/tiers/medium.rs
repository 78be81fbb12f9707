//! Which storage tier an event's `medium` names, as Dynamo maps the engines' strings
//! (`StorageTier::from_kv_medium` in its kv-router; SGLang's `StorageMedium`, vLLM's `medium`,
//! KVBM's G1/G2/G3, LMCache/Mooncake's shared pools), case-insensitively.

/// A storage tier below the device (GPU memory), in order of distance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LowerTier {
  /// Host memory (CPU, pinned or not): a reload over PCIe.
  Host = 0,
  /// Local disk or NVMe: a read from storage.
  Disk = 1,
  /// A shared or remote pool (Mooncake store, LMCache remote, ...): a network fetch.
  External = 2,
}

/// Lower tiers there are (the size of per-tier arrays, indexed by `LowerTier as usize`).
pub const LOWER_TIERS: usize = 3;

impl LowerTier {
  pub const ALL: [LowerTier; LOWER_TIERS] = [LowerTier::Host, LowerTier::Disk, LowerTier::External];

  pub fn name(self) -> &'static str {
    match self {
      Self::Host => "host",
      Self::Disk => "disk",
      Self::External => "external",
    }
  }

  #[inline]
  pub fn bit(self) -> u8 {
    1 << self as u8
  }
}

/// Where a block an event speaks of lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Medium {
  Device,
  Lower(LowerTier),
  /// A medium no engine is known to send: counted, never indexed.
  Unknown,
}

/// The tier of an event's medium. No medium means the device (engines that do not say).
pub fn medium_tier(medium: Option<&str>) -> Medium {
  let Some(m) = medium else { return Medium::Device };
  let is = |names: &[&str]| names.iter().any(|n| m.eq_ignore_ascii_case(n));
  if is(&["GPU", "DEVICE"]) {
    Medium::Device
  } else if is(&["CPU", "CPU_PINNED", "CPU_TIER1"]) {
    Medium::Lower(LowerTier::Host)
  } else if is(&["CPU_TIER2", "DISK", "NVME", "STORAGE"]) {
    Medium::Lower(LowerTier::Disk)
  } else if is(&["EXTERNAL", "NETWORK", "REMOTE", "SHARED"]) {
    Medium::Lower(LowerTier::External)
  } else {
    Medium::Unknown
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn media_map_as_dynamo_maps_them_in_any_case() {
    assert_eq!(medium_tier(None), Medium::Device);
    for m in ["GPU", "gpu", "device", "DEVICE"] {
      assert_eq!(medium_tier(Some(m)), Medium::Device, "{m}");
    }
    for m in ["CPU", "cpu_pinned", "CPU_TIER1"] {
      assert_eq!(medium_tier(Some(m)), Medium::Lower(LowerTier::Host), "{m}");
    }
    for m in ["CPU_TIER2", "disk", "NVMe", "STORAGE"] {
      assert_eq!(medium_tier(Some(m)), Medium::Lower(LowerTier::Disk), "{m}");
    }
    for m in ["EXTERNAL", "network", "Remote", "SHARED"] {
      assert_eq!(medium_tier(Some(m)), Medium::Lower(LowerTier::External), "{m}");
    }
    for m in ["", "TAPE", "GPU1"] {
      assert_eq!(medium_tier(Some(m)), Medium::Unknown, "{m}");
    }
  }
}
