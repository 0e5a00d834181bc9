import Testing
@testable import HTTPTransport
@testable import PatchServer

/// The body budget's pools and shares (issue 43, item 2), without sockets: what fits, what is
/// refused and why, and what a release gives back. FrontDoorShareTests drives the same
/// bounds through a server on loopback.
@Suite("Body budget: a token pool anonymous bodies cannot reach, and shares within each pool")
struct BodyBudgetTests {
    static let limits = BodyBudget.Limits(anonymous: 32_000, perAddress: 4_000, perNetwork: 12_000, token: 32_000, perHolder: 16_000)

    static func anonymous(_ address: String) -> BodyCharge { .anonymous(client: IPAddress(address)!) }

    /// Reserves `bytes` for `charge` until one is refused or `most` are held; how many were.
    static func fill(_ budget: BodyBudget, _ charge: BodyCharge, bytes: Int = 1_000, most: Int = 1_000) -> (held: Int, refusal: BodyBudget.Refusal?) {
        for held in 0..<most {
            if case .failure(let refusal) = budget.reserve(bytes, for: charge) { return (held, refusal) }
        }
        return (most, nil)
    }

    @Test("anonymous bodies filling their pool from many networks leave the token pool whole: a publish and a small approval still fit")
    func poolsApart() {
        let budget = BodyBudget(limits: Self.limits)
        var held = 0
        // 3 addresses in each of 4 /24s: 4 + 4 + 4 in each of the first two networks, then the pool's last 8.
        for network in 0..<4 {
            for host in 1...3 { held += Self.fill(budget, Self.anonymous("198.51.\(network).\(host)"), most: 10).held }
        }
        #expect(held == 32)
        #expect(budget.inUse(.anonymous) == 32_000)
        if case .failure(let refusal) = budget.reserve(1_000, for: Self.anonymous("203.0.113.9")) {
            #expect(refusal == .pool(.anonymous))
        } else {
            Issue.record("the anonymous pool is full")
        }
        #expect((try? budget.reserve(10_000, for: .token(holder: "ci")).get()) != nil, "a publish")
        #expect((try? budget.reserve(500, for: .token(holder: "approver")).get()) != nil, "an approval")
        #expect(budget.inUse == 42_500)
    }

    @Test("one address holds at most its share, one /24 at most the network's; another address of the /24 has only what the network left")
    func addressAndNetworkShares() {
        let budget = BodyBudget(limits: Self.limits)
        let one = Self.fill(budget, Self.anonymous("198.51.100.7"))
        #expect(one.held == 4 && one.refusal == .share(.anonymous))
        #expect(Self.fill(budget, Self.anonymous("198.51.100.8")).held == 4)
        let third = Self.fill(budget, Self.anonymous("198.51.100.9"))
        #expect(third.held == 4)
        #expect(Self.fill(budget, Self.anonymous("198.51.100.10")).held == 0, "the /24 holds its 12,000")
        #expect(Self.fill(budget, Self.anonymous("198.51.101.1")).held == 4, "the next /24 is not held back")
    }

    @Test("IPv6: one /64 is one address, one /48 one network, as the other per-client limits count them")
    func ipv6Groups() {
        let budget = BodyBudget(limits: Self.limits, ipv6Prefix: 64)
        #expect(Self.fill(budget, Self.anonymous("2001:db8:1:1::1")).held == 4)
        #expect(Self.fill(budget, Self.anonymous("2001:db8:1:1::2")).held == 0, "another address of the same /64")
        #expect(Self.fill(budget, Self.anonymous("2001:db8:1:2::1")).held == 4)
        #expect(Self.fill(budget, Self.anonymous("2001:db8:1:3::1")).held == 4)
        #expect(Self.fill(budget, Self.anonymous("2001:db8:1:4::1")).held == 0, "the /48 holds its 12,000")
        #expect(Self.fill(budget, Self.anonymous("2001:db8:2:1::1")).held == 4, "another /48")
    }

    @Test("one token holder holds at most its share of the token pool; another holder's small body still fits")
    func holderShare() {
        let budget = BodyBudget(limits: Self.limits)
        let ci = Self.fill(budget, .token(holder: "ci"), bytes: 5_000)
        #expect(ci.held == 3 && ci.refusal == .share(.token))
        #expect((try? budget.reserve(1_000, for: .token(holder: "ci")).get()) != nil, "its share's last 1,000")
        #expect((try? budget.reserve(400, for: .token(holder: "approver")).get()) != nil)
        #expect(budget.inUse(.token) == 16_400)
    }

    @Test("a body without a client to hold to a share (a trusted proxy naming none) meets the pool alone")
    func noClient() {
        let budget = BodyBudget(limits: Self.limits)
        #expect(Self.fill(budget, .anonymous(client: nil)).held == 32)
    }

    @Test("a refused reservation counts nowhere; a release frees its pool and every group it was counted in")
    func releaseFreesEveryGroup() throws {
        let budget = BodyBudget(limits: Self.limits)
        let held = try (0..<4).map { _ in try budget.reserve(1_000, for: Self.anonymous("198.51.100.7")).get() }
        #expect((try? budget.reserve(1_000, for: Self.anonymous("198.51.100.7")).get()) == nil)
        #expect(budget.inUse == 4_000)
        for reservation in held { budget.release(reservation) }
        #expect(budget.inUse == 0)
        #expect(Self.fill(budget, Self.anonymous("198.51.100.7")).held == 4, "the address's share is whole again")
    }

    @Test("unset pools and shares derive from the body budget; a token pool as large as the budget, or a share larger than its pool, is refused")
    func configuration() {
        var configuration = HTTPServerConfiguration()
        #expect(configuration.bodyLimits == BodyBudget.Limits(anonymous: 32 << 20, perAddress: 2 << 20, perNetwork: 8 << 20,
                                                               token: 32 << 20, perHolder: 16 << 20))
        configuration.bodyBudget = 4_000_000
        configuration.tokenBodyBudget = 3_000_000
        #expect(configuration.bodyLimits == BodyBudget.Limits(anonymous: 1_000_000, perAddress: 62_500, perNetwork: 250_000,
                                                               token: 3_000_000, perHolder: 1_500_000))
        #expect(throws: Never.self) { try configuration.validate() }
        configuration.tokenBodyBudget = 4_000_000
        #expect(throws: HTTPServerError.self) { try configuration.validate() }
        configuration.tokenBodyBudget = nil
        configuration.tokenBodyShare = 2_000_001
        #expect(throws: HTTPServerError.self) { try configuration.validate() }
        configuration.tokenBodyShare = nil
        configuration.networkBodyShare = 2_000_001
        #expect(throws: HTTPServerError.self) { try configuration.validate() }
    }
}
