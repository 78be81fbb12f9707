//! Reads the workload file that bench/peers/workload-file.ts writes from kvroute's own indexer
//! workload generator, so that Dynamo's indexer and kvroute's see exactly the same events and
//! queries. The layout (little-endian) is documented there.

use std::fmt;

pub const MAGIC: &[u8; 8] = b"KVRPEERW";
pub const VERSION: u32 = 1;

pub struct StoredEvent {
    pub worker: u32,
    pub dp_rank: u32,
    pub parent: Option<u64>,
    /// The engine's names of the blocks (opaque keys for parents and removals).
    pub block_hashes: Vec<u64>,
    /// kvroute's `computeBlockHashes` of each block's tokens (Dynamo's `LocalBlockHash`).
    pub local_hashes: Vec<u64>,
    pub tokens: Vec<u32>,
}

pub struct RemovedEvent {
    pub worker: u32,
    pub dp_rank: u32,
    pub block_hashes: Vec<u64>,
}

pub struct Query {
    pub local_hashes: Vec<u64>,
    pub tokens: Vec<u32>,
}

pub struct Workload {
    pub block_size: u32,
    pub stored: Vec<StoredEvent>,
    pub removed: Vec<RemovedEvent>,
    pub queries: Vec<Query>,
}

#[derive(Debug)]
pub struct FormatError(pub String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad workload file: {}", self.0)
    }
}

/// Reads the little-endian fields of a workload file in order (the fleet file's reader shares it).
pub struct Cursor<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
}

impl<'a> Cursor<'a> {
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], FormatError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(FormatError(format!("truncated at byte {} while reading {what}", self.at)));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }

    pub fn u64(&mut self, what: &str) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }

    pub fn u64s(&mut self, n: usize, what: &str) -> Result<Vec<u64>, FormatError> {
        let raw = self.take(n * 8, what)?;
        Ok(raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect())
    }

    pub fn u32s(&mut self, n: usize, what: &str) -> Result<Vec<u32>, FormatError> {
        let raw = self.take(n * 4, what)?;
        Ok(raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect())
    }
}

pub fn parse(bytes: &[u8]) -> Result<Workload, FormatError> {
    let mut c = Cursor { bytes, at: 0 };
    if c.take(8, "the magic")? != MAGIC {
        return Err(FormatError("not a kvroute peer workload (magic)".into()));
    }
    let version = c.u32("the version")?;
    if version != VERSION {
        return Err(FormatError(format!("version {version}, this reader knows {VERSION}")));
    }
    let block_size = c.u32("the block size")?;
    let stored_count = c.u32("the stored count")? as usize;
    let removed_count = c.u32("the removed count")? as usize;
    let query_count = c.u32("the query count")? as usize;
    c.u32("reserved")?;
    if block_size == 0 {
        return Err(FormatError("block size 0".into()));
    }
    let bs = block_size as usize;

    let mut stored = Vec::with_capacity(stored_count);
    for _ in 0..stored_count {
        let worker = c.u32("a stored event's worker")?;
        let dp_rank = c.u32("a stored event's dp rank")?;
        let n = c.u32("a stored event's block count")? as usize;
        let has_parent = c.u32("a stored event's parent flag")?;
        let parent = c.u64("a stored event's parent")?;
        let block_hashes = c.u64s(n, "a stored event's block hashes")?;
        let local_hashes = c.u64s(n, "a stored event's local hashes")?;
        let tokens = c.u32s(n * bs, "a stored event's tokens")?;
        stored.push(StoredEvent {
            worker,
            dp_rank,
            parent: (has_parent != 0).then_some(parent),
            block_hashes,
            local_hashes,
            tokens,
        });
    }
    let mut removed = Vec::with_capacity(removed_count);
    for _ in 0..removed_count {
        let worker = c.u32("a removed event's worker")?;
        let dp_rank = c.u32("a removed event's dp rank")?;
        let n = c.u32("a removed event's block count")? as usize;
        c.u32("reserved")?;
        removed.push(RemovedEvent { worker, dp_rank, block_hashes: c.u64s(n, "a removed event's hashes")? });
    }
    let mut queries = Vec::with_capacity(query_count);
    for _ in 0..query_count {
        let n = c.u32("a query's block count")? as usize;
        let t = c.u32("a query's token count")? as usize;
        if t != n * bs {
            return Err(FormatError(format!("a query of {n} blocks holds {t} tokens, not {}", n * bs)));
        }
        let local_hashes = c.u64s(n, "a query's local hashes")?;
        let tokens = c.u32s(t, "a query's tokens")?;
        queries.push(Query { local_hashes, tokens });
    }
    if c.at != bytes.len() {
        return Err(FormatError(format!("{} bytes after the last query", bytes.len() - c.at)));
    }
    Ok(Workload { block_size, stored, removed, queries })
}
