#if AsyncHTTPClient
  import CepisSupport
  import Foundation
  import NIOCore
  import NIOPosix
  import NIOSSL
  import X509

  /// Why AsyncHTTPClient refused a server's certificate, in the words every transport uses.
  ///
  /// swift-nio-ssl reports an unknown authority, an expired certificate and one for another
  /// purpose alike (`CERTIFICATE_VERIFY_FAILED`), and AsyncHTTPClient takes no verification
  /// hook. So after such a failure, and only then, one more handshake with the same server
  /// (through the same proxy's tunnel) reads the chain it presents, refuses it (nothing is
  /// sent), and ``reason(chain:now:)`` names what is wrong with it. That handshake is not a
  /// retry: no request goes out, and the call still ends at once.
  enum TLSDiagnosis {
    /// What is wrong with `chain` (the server's certificate first) at `now`, given that the
    /// TLS library refused it and its host name was not the problem: a certificate of it out
    /// of its validity, else a server certificate whose extended key usage leaves out server
    /// authentication, else an authority the client does not trust.
    static func reason(chain: [Certificate], now: Date) -> TLSRejection.Reason {
      guard let leaf = chain.first else { return .unknownAuthority }
      if chain.contains(where: { now < $0.notValidBefore || now > $0.notValidAfter }) {
        return .expired
      }
      if let usage = try? leaf.extensions.extendedKeyUsage,
        !usage.contains(.serverAuth), !usage.contains(.any)
      {
        return .purpose
      }
      return .unknownAuthority
    }

    /// `rejection` itself unless it is ``TLSRejection/Reason/untrusted``; then the reason the
    /// chain that `url`'s server presents shows, read within `timeout` seconds (through
    /// `proxy`'s tunnel when given), or `rejection` when it cannot be read.
    static func diagnose(
      _ rejection: TLSRejection, url: URL, proxy: ProxyEndpoint?, group: any EventLoopGroup,
      timeout: TimeInterval
    ) async -> TLSRejection {
      guard rejection.reason == .untrusted, let host = url.host else { return rejection }
      let port = url.port ?? 443
      guard
        let chain = await presentedChain(
          host: host, port: port, proxy: proxy, group: group, timeout: timeout),
        !chain.isEmpty
      else { return rejection }
      let certificates = chain.compactMap { try? Certificate(derEncoded: $0) }
      guard certificates.count == chain.count else { return rejection }
      return TLSRejection(reason(chain: certificates, now: Date()))
    }

    /// The DER of each certificate `host` presents in a handshake that is then refused,
    /// `nil` when none came within `timeout` seconds (or the tunnel was refused).
    static func presentedChain(
      host: String, port: Int, proxy: ProxyEndpoint?, group: any EventLoopGroup,
      timeout: TimeInterval
    ) async -> [[UInt8]]? {
      let outcome = ChainOutcome()
      let context: NIOSSLContext
      do {
        context = try NIOSSLContext(configuration: .makeClientConfiguration())
      } catch {
        return nil
      }
      // SNI carries a host name, never an address.
      let serverName =
        host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." })
        ? nil : host
      let makeTLS: @Sendable () throws -> NIOSSLClientHandler = {
        try NIOSSLClientHandler(
          context: context, serverHostname: serverName,
          customVerificationCallback: { certificates, verdict in
            outcome.finish(certificates.compactMap { try? $0.toDERBytes() })
            verdict.succeed(.failed)
          })
      }
      let bootstrap = ClientBootstrap(group: group)
        .connectTimeout(.milliseconds(Int64(timeout * 1_000)))
        .channelInitializer { channel in
          channel.eventLoop.makeCompletedFuture {
            if proxy != nil {
              try channel.pipeline.syncOperations.addHandler(
                TunnelHandler(target: "\(host):\(port)", then: makeTLS, outcome: outcome))
            } else {
              try channel.pipeline.syncOperations.addHandler(try makeTLS())
            }
          }
        }
      let channel: any Channel
      do {
        channel =
          try await bootstrap.connect(host: proxy?.host ?? host, port: proxy?.port ?? port).get()
      } catch {
        return nil
      }
      channel.closeFuture.whenComplete { _ in outcome.finish(nil) }
      let timer = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1_000))) {
        outcome.finish(nil)
      }
      let chain = await outcome.value()
      timer.cancel()
      channel.close(promise: nil)
      return chain
    }

    /// The chain once, from whichever of the handshake, a close or the timer comes first.
    final class ChainOutcome: Sendable {
      private struct State: Sendable {
        var chain: [[UInt8]]??
        var waiter: CheckedContinuation<[[UInt8]]?, Never>?
      }
      private let state = LockedValue(State())

      func finish(_ chain: [[UInt8]]?) {
        let waiter = state.withLock { state -> CheckedContinuation<[[UInt8]]?, Never>? in
          guard state.chain == nil else { return nil }
          state.chain = .some(chain)
          defer { state.waiter = nil }
          return state.waiter
        }
        waiter?.resume(returning: chain)
      }

      func value() async -> [[UInt8]]? {
        await withCheckedContinuation { continuation in
          let ready = state.withLock { state -> [[UInt8]]?? in
            if let chain = state.chain { return .some(chain) }
            state.waiter = continuation
            return nil
          }
          if let ready { continuation.resume(returning: ready) }
        }
      }
    }

    /// Asks a proxy for a tunnel (`CONNECT`), then hands the connection to TLS.
    final class TunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
      typealias InboundIn = ByteBuffer
      typealias OutboundOut = ByteBuffer
      private let target: String
      private let makeTLS: @Sendable () throws -> NIOSSLClientHandler
      private let outcome: ChainOutcome
      private var received = ByteBuffer()

      init(
        target: String, then makeTLS: @escaping @Sendable () throws -> NIOSSLClientHandler,
        outcome: ChainOutcome
      ) {
        self.target = target
        self.makeTLS = makeTLS
        self.outcome = outcome
      }

      func channelActive(context: ChannelHandlerContext) {
        let request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n"
        let outcome = self.outcome
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: request)))
          .whenFailure { _ in outcome.finish(nil) }
        context.fireChannelActive()
      }

      func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received.writeBuffer(&buffer)
        let text = String(buffer: received)
        guard let end = text.range(of: "\r\n\r\n") else {
          if received.readableBytes > 16_384 { fail(context) }
          return
        }
        let status = text[..<end.lowerBound].split(separator: " ", maxSplits: 2)
        guard status.count >= 2, status[0].hasPrefix("HTTP/1."), status[1] == "200" else {
          return fail(context)
        }
        do {
          try context.pipeline.syncOperations.addHandler(try makeTLS())
          _ = context.pipeline.syncOperations.removeHandler(context: context)
        } catch {
          fail(context)
        }
      }

      private func fail(_ context: ChannelHandlerContext) {
        outcome.finish(nil)
        context.close(promise: nil)
      }
    }
  }
#endif
