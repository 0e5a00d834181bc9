import Locking

/// Whom an admitted body is charged to in the body budget. The application decides (the
/// transport knows no credential); the transport reserves and enforces. Issue 43, item 2:
/// with one pool for all, 1,024 anonymous heads from 8 addresses, each declaring 64 KiB and
/// never sending it, held the whole budget, and every publish, halt and approval got 503.
public enum BodyCharge: Sendable, Equatable {
    /// A body no credential vouches for (patchd: a device report or registration), from the
    /// anonymous pool, counted against the client's address and its network, each held to a
    /// share of that pool. nil: no client to hold to a share (a trusted proxy that named none).
    case anonymous(client: IPAddress?)
    /// A body admitted on a credential (patchd: a bearer token; `holder` its line of issue),
    /// from the token pool, which anonymous bodies cannot reach, counted against its holder,
    /// held to a share of that pool so one holder cannot keep another's small body out.
    case token(holder: String)

    var pool: BodyBudget.Pool {
        if case .token = self { return .token }
        return .anonymous
    }
}

/// Request-body bytes reserved by the requests in flight: an upload reserves its declared
/// length (or its route's limit, when chunked) before a byte of it is read, so a crowd of
/// uploads meets a 503, never an out-of-memory kill. Two pools that together hold
/// `HTTPServerConfiguration.bodyBudget`, and within each a share per group (`Limits`): a
/// reservation is made in its pool and in every group of its charge, or nowhere.
final class BodyBudget: Sendable {
    enum Pool: Sendable { case anonymous, token }

    /// What each pool and each group may hold, in bytes.
    struct Limits: Sendable, Equatable {
        var anonymous: Int
        /// One client address (IPv6: its `ipv6Prefix` network) in the anonymous pool.
        var perAddress: Int
        /// One IPv4 /24 or IPv6 /48 (`IPAddress.network`) in the anonymous pool.
        var perNetwork: Int
        var token: Int
        /// One holder in the token pool.
        var perHolder: Int
    }

    /// Why a reservation did not fit.
    enum Refusal: Error, Equatable {
        /// The pool is full.
        case pool(Pool)
        /// The pool has room, but not the share of one of the charge's groups.
        case share(Pool)
    }

    /// A reservation held, to be given back once with `release`.
    struct Reservation: Sendable {
        let bytes: Int
        let pool: Pool
        fileprivate let groups: [Group]
    }

    /// One counted total: a pool, or a group within one.
    fileprivate enum Group: Hashable, Sendable {
        case pool(Pool)
        case address(IPAddress)
        case network(String)
        case holder(String)
    }

    private let reserved = Locked<[Group: Int]>([:])
    let limits: Limits
    let ipv6Prefix: Int

    init(limits: Limits, ipv6Prefix: Int = 64) {
        self.limits = limits
        self.ipv6Prefix = ipv6Prefix
    }

    /// The totals a charge counts in, with their capacities: its pool first.
    private func groups(_ charge: BodyCharge) -> [(group: Group, capacity: Int)] {
        switch charge {
        case .anonymous(nil):
            return [(.pool(.anonymous), limits.anonymous)]
        case .anonymous(let client?):
            return [(.pool(.anonymous), limits.anonymous), (.address(client.limitKey(ipv6Prefix: ipv6Prefix)), limits.perAddress),
                    (.network(client.network), limits.perNetwork)]
        case .token(let holder):
            return [(.pool(.token), limits.token), (.holder(holder), limits.perHolder)]
        }
    }

    func reserve(_ bytes: Int, for charge: BodyCharge) -> Result<Reservation, Refusal> {
        let groups = groups(charge)
        return reserved.withLock { reserved in
            for (index, (group, capacity)) in groups.enumerated() where reserved[group, default: 0] + bytes > capacity {
                return .failure(index == 0 ? .pool(charge.pool) : .share(charge.pool))
            }
            for (group, _) in groups { reserved[group, default: 0] += bytes }
            return .success(Reservation(bytes: bytes, pool: charge.pool, groups: groups.map(\.group)))
        }
    }

    func release(_ reservation: Reservation) {
        reserved.withLock { reserved in
            for group in reservation.groups {
                let left = reserved[group, default: 0] - reservation.bytes
                reserved[group] = left > 0 ? left : nil
            }
        }
    }

    /// Bytes reserved in both pools.
    var inUse: Int { reserved.withLock { $0[.pool(.anonymous), default: 0] + $0[.pool(.token), default: 0] } }

    func inUse(_ pool: Pool) -> Int { reserved.withLock { $0[.pool(pool), default: 0] } }
}
