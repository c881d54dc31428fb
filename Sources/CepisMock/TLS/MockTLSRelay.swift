#if AsyncHTTPClient
  import CepisSupport
  import Foundation
  import NIOCore
  import NIOPosix
  import NIOSSL

  /// CepisMock's routes over HTTPS: a TLS-terminating relay on 127.0.0.1 that forwards every
  /// connection's bytes, decrypted, to a plain ``MockServer`` on the same host. Only in builds
  /// with the `AsyncHTTPClient` trait (it runs on SwiftNIO and swift-nio-ssl).
  ///
  /// The server behind it is untouched: its routes, faults and request log apply as over plain
  /// HTTP. The relay counts the connections it accepts, so a test can prove that a client
  /// refusing a certificate did not come back for another attempt.
  ///
  /// Started without an identity, the relay forwards bytes without TLS: a server that speaks
  /// plain HTTP where a client expects TLS, counted the same way.
  ///
  /// ```swift
  /// let authority = try MockCertificateAuthority()
  /// let relay = try await MockTLSRelay.start(
  ///   forwardingTo: server.port, serving: try authority.issue(.valid))
  /// defer { Task { await relay.stop() } }
  /// // https://localhost:\(relay.port)/… reaches the server's routes.
  /// ```
  public final class MockTLSRelay: Sendable {
    /// The port it listens on, on 127.0.0.1.
    public let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let accepted: LockedValue<Int>

    /// The relay's base URL, with the host its certificates name: `https://localhost:PORT`
    /// (`http://` for a relay started without an identity).
    public let baseURL: URL

    /// The connections accepted so far.
    public var acceptedConnections: Int { accepted.withLock { $0 } }

    private init(
      port: Int, group: MultiThreadedEventLoopGroup, channel: any Channel,
      accepted: LockedValue<Int>, secure: Bool
    ) {
      self.port = port
      self.group = group
      self.channel = channel
      self.accepted = accepted
      self.baseURL = URL(string: "\(secure ? "https" : "http")://localhost:\(port)")!
    }

    /// Starts a relay on 127.0.0.1 (a free port) to 127.0.0.1:`upstreamPort`, presenting
    /// `identity` (or speaking no TLS when it is `nil`).
    ///
    /// - Throws: swift-nio-ssl's error when the identity's PEM cannot be loaded, SwiftNIO's when
    ///   the port cannot be bound.
    public static func start(
      forwardingTo upstreamPort: Int, serving identity: MockCertificateAuthority.ServerIdentity?
    ) async throws -> MockTLSRelay {
      let context: NIOSSLContext?
      if let identity {
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(identity.certificatePEM.utf8))
        let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)
        context = try NIOSSLContext(
          configuration: .makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key)))
      } else {
        context = nil
      }
      let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
      let accepted = LockedValue(0)
      do {
        let channel = try await ServerBootstrap(group: group)
          .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
          .childChannelInitializer { child in
            accepted.withLock { $0 += 1 }
            return child.eventLoop.makeCompletedFuture {
              let handlers = child.pipeline.syncOperations
              if let context {
                try handlers.addHandler(NIOSSLServerHandler(context: context))
              }
              try handlers.addHandler(RelayFrontHandler(upstreamPort: upstreamPort))
            }
          }
          .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else {
          throw MockTLSRelayError.noPort
        }
        return MockTLSRelay(
          port: port, group: group, channel: channel, accepted: accepted,
          secure: identity != nil)
      } catch {
        try? await group.shutdownGracefully()
        throw error
      }
    }

    /// Stops listening and closes every relayed connection.
    public func stop() async {
      try? await channel.close()
      try? await group.shutdownGracefully()
    }
  }

  /// Why a relay could not start.
  public enum MockTLSRelayError: Error, Sendable {
    /// The listening socket reported no port.
    case noPort
  }

  /// The client-facing end of one relayed connection: connects to the upstream server when
  /// the client connects and passes bytes both ways until either side closes.
  private final class RelayFrontHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let upstreamPort: Int
    private var upstream: (any Channel)?
    private var pending: [ByteBuffer] = []
    private var closed = false

    init(upstreamPort: Int) {
      self.upstreamPort = upstreamPort
    }

    func channelActive(context: ChannelHandlerContext) {
      let front = context.channel
      let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
      ClientBootstrap(group: context.eventLoop)
        .channelInitializer { back in
          back.eventLoop.makeCompletedFuture {
            try back.pipeline.syncOperations.addHandler(RelayBackHandler(front: front))
          }
        }
        .connect(host: "127.0.0.1", port: upstreamPort)
        .assumeIsolated()
        .whenComplete { result in
          let handler = loopBound.value
          switch result {
          case .success(let back):
            if handler.closed {
              back.close(promise: nil)
              return
            }
            handler.upstream = back
            for buffer in handler.pending { back.write(buffer, promise: nil) }
            handler.pending = []
            back.flush()
          case .failure:
            front.close(promise: nil)
          }
        }
      context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      let buffer = unwrapInboundIn(data)
      if let upstream {
        upstream.writeAndFlush(buffer, promise: nil)
      } else {
        pending.append(buffer)
      }
    }

    func channelInactive(context: ChannelHandlerContext) {
      closed = true
      upstream?.close(promise: nil)
      context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
      // A client that refuses the certificate ends the handshake with an alert: the connection
      // is over, and nothing is forwarded.
      context.close(promise: nil)
    }
  }

  /// The server-facing end of one relayed connection.
  private final class RelayBackHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let front: any Channel

    init(front: any Channel) {
      self.front = front
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      front.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
      front.close(promise: nil)
      context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
      context.close(promise: nil)
    }
  }
#endif
