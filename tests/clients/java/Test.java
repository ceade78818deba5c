import java.sql.*;
import java.util.*;
public class Test {
    public static void main(String[] args) throws Exception {
        String url = args[0];
        for (String rw : new String[]{"false", "true"}) {
            Properties p = new Properties();
            p.setProperty("user", "postgres");
            p.setProperty("reWriteBatchedInserts", rw);
            try (Connection c = DriverManager.getConnection(url, p)) {
                String t = args[1] + "_" + rw;
                try (Statement s = c.createStatement()) {
                    s.execute("DROP TABLE IF EXISTS " + t);
                    s.execute("CREATE TABLE " + t + " (id int PRIMARY KEY, name text, v double precision, ts timestamptz)");
                }
                DatabaseMetaData md = c.getMetaData();
                boolean found = false;
                try (ResultSet rs = md.getTables(null, "public", "%", new String[]{"TABLE"})) {
                    while (rs.next()) if (rs.getString("TABLE_NAME").equals(t)) found = true;
                }
                if (!found) throw new RuntimeException("getTables did not list " + t);
                c.setAutoCommit(false);
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " (id, name, v, ts) VALUES (?, ?, ?, ?)")) {
                    for (int i = 0; i < 1000; i++) {
                        ps.setInt(1, i); ps.setString(2, "n" + i); ps.setDouble(3, i * 0.5);
                        ps.setTimestamp(4, new Timestamp(1700000000000L + i));
                        ps.addBatch();
                    }
                    int[] r = ps.executeBatch();
                    System.out.println("batch results " + r.length);
                }
                c.commit();
                try (PreparedStatement ps = c.prepareStatement("SELECT count(*), sum(id), min(name) FROM " + t + " WHERE v >= ?")) {
                    ps.setDouble(1, 0.0);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        System.out.println("rows " + rs.getLong(1) + " " + rs.getLong(2) + " " + rs.getString(3));
                        if (rs.getLong(1) != 1000) throw new RuntimeException("count");
                    }
                }
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT id, name, v, ts FROM " + t + " ORDER BY id LIMIT 3")) {
                    while (rs.next()) System.out.println(rs.getInt(1) + " " + rs.getString(2) + " " + rs.getDouble(3) + " " + rs.getTimestamp(4));
                }
                c.commit();
                // setReadOnly: pgjdbc begins each transaction READ ONLY; a write is 25006
                c.setReadOnly(true);
                try (Statement s = c.createStatement()) {
                    s.executeUpdate("INSERT INTO " + t + " (id) VALUES (-1)");
                    throw new RuntimeException("a read-only transaction took an INSERT");
                } catch (SQLException e) {
                    if (!"25006".equals(e.getSQLState())) throw e;
                    System.out.println("read only refused " + e.getSQLState());
                }
                c.rollback();
                c.setReadOnly(false);
                c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW transaction_isolation")) {
                    rs.next();
                    System.out.println("isolation " + rs.getString(1));
                }
                c.commit();
                c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            }
        }
        System.out.println("OK");
    }
}
