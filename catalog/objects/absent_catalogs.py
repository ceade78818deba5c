"""PostgreSQL 15 catalogs of objects splitstream does not have, with their
columns and no rows: operators, operator families, text search, encoding
conversions, operator families' members, transforms, event triggers, partitioned tables, subscriptions,
large objects, security labels and privileges on parameters.

Why empty tables and not 42P01: clients that walk the whole catalog (pg_dump
reads every one of these to find user objects) must get the true answer,
which is that a splitstream database holds no such object; a statement
that would make one is refused where it is written.
"""
from __future__ import annotations

from splitstream.protocol import oids as type_oids

from .system_catalogs import CATALOG_OIDS, TEXTARR, table

OID, NAME, CHAR, BOOL, INT4, TEXT, REGPROC = (type_oids.OID, type_oids.NAME, type_oids.CHAR, type_oids.BOOL,
                                              type_oids.INT4, type_oids.TEXT, type_oids.REGPROC)

#: name -> (PostgreSQL 15's OID of the catalog, its columns)
ABSENT = {
    "pg_operator": (2617, [("oid", OID), ("oprname", NAME), ("oprnamespace", OID), ("oprowner", OID),
                           ("oprkind", CHAR), ("oprcanmerge", BOOL), ("oprcanhash", BOOL), ("oprleft", OID),
                           ("oprright", OID), ("oprresult", OID), ("oprcom", OID), ("oprnegate", OID),
                           ("oprcode", REGPROC), ("oprrest", REGPROC), ("oprjoin", REGPROC)]),
    "pg_opfamily": (2753, [("oid", OID), ("opfmethod", OID), ("opfname", NAME), ("opfnamespace", OID),
                           ("opfowner", OID)]),
    "pg_amop": (2602, [("oid", OID), ("amopfamily", OID), ("amoplefttype", OID), ("amoprighttype", OID),
                       ("amopstrategy", type_oids.INT2), ("amoppurpose", CHAR), ("amopopr", OID), ("amopmethod", OID),
                       ("amopsortfamily", OID)]),
    "pg_amproc": (2603, [("oid", OID), ("amprocfamily", OID), ("amproclefttype", OID), ("amprocrighttype", OID),
                         ("amprocnum", type_oids.INT2), ("amproc", REGPROC)]),
    "pg_ts_parser": (3601, [("oid", OID), ("prsname", NAME), ("prsnamespace", OID), ("prsstart", REGPROC),
                            ("prstoken", REGPROC), ("prsend", REGPROC), ("prsheadline", REGPROC),
                            ("prslextype", REGPROC)]),
    "pg_ts_template": (3764, [("oid", OID), ("tmplname", NAME), ("tmplnamespace", OID), ("tmplinit", REGPROC),
                              ("tmpllexize", REGPROC)]),
    "pg_ts_dict": (3600, [("oid", OID), ("dictname", NAME), ("dictnamespace", OID), ("dictowner", OID),
                          ("dicttemplate", OID), ("dictinitoption", TEXT)]),
    "pg_ts_config": (3602, [("oid", OID), ("cfgname", NAME), ("cfgnamespace", OID), ("cfgowner", OID),
                            ("cfgparser", OID)]),
    "pg_conversion": (2607, [("oid", OID), ("conname", NAME), ("connamespace", OID), ("conowner", OID),
                             ("conforencoding", INT4), ("contoencoding", INT4), ("conproc", REGPROC),
                             ("condefault", BOOL)]),
    "pg_transform": (3576, [("oid", OID), ("trftype", OID), ("trflang", OID), ("trffromsql", REGPROC),
                            ("trftosql", REGPROC)]),
    "pg_event_trigger": (3466, [("oid", OID), ("evtname", NAME), ("evtevent", NAME), ("evtowner", OID),
                                ("evtfoid", OID), ("evtenabled", CHAR), ("evttags", TEXTARR)]),
    "pg_partitioned_table": (3350, [("partrelid", OID), ("partstrat", CHAR), ("partnatts", type_oids.INT2),
                                    ("partdefid", OID), ("partattrs", type_oids.INT2VECTOR),
                                    ("partclass", type_oids.OIDVECTOR), ("partcollation", type_oids.OIDVECTOR),
                                    ("partexprs", TEXT)]),
    "pg_subscription": (6100, [("oid", OID), ("subdbid", OID), ("subskiplsn", TEXT), ("subname", NAME),
                               ("subowner", OID), ("subenabled", BOOL), ("subbinary", BOOL), ("substream", BOOL),
                               ("subtwophasestate", CHAR), ("subdisableonerr", BOOL), ("subconninfo", TEXT),
                               ("subslotname", NAME), ("subsynccommit", TEXT), ("subpublications", TEXTARR)]),
    "pg_largeobject_metadata": (2995, [("oid", OID), ("lomowner", OID), ("lomacl", TEXTARR)]),
    "pg_seclabel": (3596, [("objoid", OID), ("classoid", OID), ("objsubid", INT4), ("provider", TEXT),
                           ("label", TEXT)]),
    "pg_shseclabel": (3592, [("objoid", OID), ("classoid", OID), ("provider", TEXT), ("label", TEXT)]),
    "pg_parameter_acl": (6243, [("oid", OID), ("parname", TEXT), ("paracl", TEXTARR)]),
    "pg_seclabels": (0, [("objoid", OID), ("classoid", OID), ("objsubid", INT4), ("objtype", TEXT),
                         ("objnamespace", OID), ("objname", TEXT), ("provider", TEXT), ("label", TEXT)]),
}


def _no_rows(state, ctx):
    return iter(())


for _name, (_oid, _columns) in ABSENT.items():
    if _oid:
        CATALOG_OIDS[_name] = _oid
    table("pg_catalog", _name, _columns)(_no_rows)
