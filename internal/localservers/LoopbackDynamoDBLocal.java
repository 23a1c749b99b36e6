// LoopbackDynamoDBLocal starts DynamoDB Local exactly as its own main does
// (the same command-line flags, the same server) but with its Jetty
// connector bound to 127.0.0.1: DynamoDB Local has no host flag and
// otherwise listens on every interface of the machine.
//
// localservers compiles it with the machine's javac against DynamoDBLocal.jar
// and caches the class (see loopback.go). It reads one private field of
// DynamoDB Local's DynamoDBProxyServer, the Jetty server its constructor
// builds; should a new version rename it, the launcher fails loudly here
// rather than serve on every interface.

import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public final class LoopbackDynamoDBLocal {
    public static void main(String[] args) throws Exception {
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field field = DynamoDBProxyServer.class.getDeclaredField("server");
        field.setAccessible(true);
        Server jetty = (Server) field.get(proxy);
        Connector[] connectors = jetty.getConnectors();
        if (connectors.length == 0) {
            throw new IllegalStateException("DynamoDB Local built no connector to bind to 127.0.0.1");
        }
        for (Connector c : connectors) {
            ((ServerConnector) c).setHost("127.0.0.1");
        }
        // safeStart, unlike start, lets a failed bind end the JVM with an error.
        proxy.safeStart();
        proxy.join();
    }
}
