// LISTEN on one connection, NOTIFY (committed, then rolled back, then by pg_notify) on another,
// and read them with PGConnection.getNotifications(timeout).
// java -cp postgresql.jar ListenNotify.java URL CHANNEL
// Prints the sender's backend pid, then "channel|payload|pid" per notification received.
import java.sql.*;
import java.util.*;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

public class ListenNotify {
    public static void main(String[] a) throws Exception {
        String url = a[0], chan = a[1];
        try (Connection listener = DriverManager.getConnection(url, "postgres", "");
             Connection sender = DriverManager.getConnection(url, "postgres", "")) {
            try (Statement st = listener.createStatement()) { st.execute("LISTEN " + chan); }
            PGConnection pgSender = sender.unwrap(PGConnection.class);
            System.out.println(pgSender.getBackendPID());
            sender.setAutoCommit(false);
            try (Statement st = sender.createStatement()) {
                st.execute("NOTIFY " + chan + ", 'one'");
                sender.commit();
                st.execute("NOTIFY " + chan + ", 'dropped'");
                sender.rollback();
            }
            try (PreparedStatement ps = sender.prepareStatement("SELECT pg_notify(?, ?)")) {
                ps.setString(1, chan);
                ps.setString(2, "two");
                ps.executeQuery().close();
                sender.commit();
            }
            PGConnection pg = listener.unwrap(PGConnection.class);
            List<PGNotification> got = new ArrayList<>();
            long end = System.currentTimeMillis() + 10000;
            while (got.size() < 2 && System.currentTimeMillis() < end) {
                PGNotification[] ns = pg.getNotifications(500);   // waits on the idle socket
                if (ns != null) got.addAll(Arrays.asList(ns));
            }
            PGNotification[] extra = pg.getNotifications(300);
            if (extra != null) got.addAll(Arrays.asList(extra));
            for (PGNotification n : got) {
                System.out.println(n.getName() + "|" + n.getParameter() + "|" + n.getPID());
            }
        }
    }
}
