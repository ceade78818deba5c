"""PostgreSQL errors as Python exceptions.

Every failure a client can cause is raised as :class:`PgError` carrying a
SQLSTATE, so the connection layer can turn it into an ErrorResponse without
knowing where it came from.  The codes follow PostgreSQL's errcodes.txt.
"""
from __future__ import annotations

from dataclasses import dataclass, field


# Class 0A / 08 / 22 / 23 / 25 / 26 / 28 / 3D / 40 / 42 / 53 / 55 / 57 / XX
FEATURE_NOT_SUPPORTED = "0A000"
PROTOCOL_VIOLATION = "08P01"
CONNECTION_EXCEPTION = "08000"
CARDINALITY_VIOLATION = "21000"
DATA_EXCEPTION = "22000"
STRING_DATA_RIGHT_TRUNCATION = "22001"
NUMERIC_VALUE_OUT_OF_RANGE = "22003"
NULL_VALUE_NOT_ALLOWED = "22004"
INVALID_DATETIME_FORMAT = "22007"
DATETIME_FIELD_OVERFLOW = "22008"
INVALID_TIME_ZONE_DISPLACEMENT_VALUE = "22009"
DIVISION_BY_ZERO = "22012"
INVALID_PARAMETER_VALUE = "22023"
CHARACTER_NOT_IN_REPERTOIRE = "22021"
INVALID_TEXT_REPRESENTATION = "22P02"
INVALID_BINARY_REPRESENTATION = "22P03"
BAD_COPY_FILE_FORMAT = "22P04"
UNTRANSLATABLE_CHARACTER = "22P05"
INVALID_ARGUMENT_FOR_POWER = "2201F"
INVALID_REGULAR_EXPRESSION = "2201B"
INVALID_ROW_COUNT_IN_LIMIT = "2201W"
ARRAY_SUBSCRIPT_ERROR = "2202E"
INVALID_JSON_TEXT = "22032"
SEQUENCE_GENERATOR_LIMIT_EXCEEDED = "2200H"
INTEGRITY_CONSTRAINT_VIOLATION = "23000"
NOT_NULL_VIOLATION = "23502"
FOREIGN_KEY_VIOLATION = "23503"
UNIQUE_VIOLATION = "23505"
CHECK_VIOLATION = "23514"
INVALID_CURSOR_STATE = "24000"
ACTIVE_SQL_TRANSACTION = "25001"
NO_ACTIVE_SQL_TRANSACTION = "25P01"
IN_FAILED_SQL_TRANSACTION = "25P02"
READ_ONLY_SQL_TRANSACTION = "25006"
INVALID_SQL_STATEMENT_NAME = "26000"
INVALID_AUTHORIZATION_SPECIFICATION = "28000"
INVALID_PASSWORD = "28P01"
INVALID_CURSOR_NAME = "34000"
INVALID_CATALOG_NAME = "3D000"
INVALID_SCHEMA_NAME = "3F000"
SERIALIZATION_FAILURE = "40001"
DEADLOCK_DETECTED = "40P01"
SYNTAX_ERROR = "42601"
INSUFFICIENT_PRIVILEGE = "42501"
UNDEFINED_COLUMN = "42703"
UNDEFINED_FUNCTION = "42883"
UNDEFINED_TABLE = "42P01"
UNDEFINED_PARAMETER = "42P02"
UNDEFINED_OBJECT = "42704"
INVALID_NAME = "42602"
DUPLICATE_COLUMN = "42701"
DUPLICATE_CURSOR = "42P03"
INVALID_CURSOR_DEFINITION = "42P11"
DUPLICATE_DATABASE = "42P04"
DUPLICATE_PREPARED_STATEMENT = "42P05"
DUPLICATE_SCHEMA = "42P06"
DUPLICATE_TABLE = "42P07"
DUPLICATE_OBJECT = "42710"
DUPLICATE_FUNCTION = "42723"
INVALID_FUNCTION_DEFINITION = "42P13"
AMBIGUOUS_COLUMN = "42702"
AMBIGUOUS_FUNCTION = "42725"
GROUPING_ERROR = "42803"
DATATYPE_MISMATCH = "42804"
WRONG_OBJECT_TYPE = "42809"
INVALID_COLUMN_REFERENCE = "42P10"
INVALID_TABLE_DEFINITION = "42P16"
INVALID_OBJECT_DEFINITION = "42P17"
UNDEFINED_SCHEMA = "3F000"
DEPENDENT_OBJECTS_STILL_EXIST = "2BP01"
INVALID_SAVEPOINT_SPECIFICATION = "3B001"
CANNOT_COERCE = "42846"
INVALID_FOREIGN_KEY = "42830"
WINDOWING_ERROR = "42P20"
RECURSION_ERROR = "42P19"
TOO_MANY_CONNECTIONS = "53300"
OUT_OF_MEMORY = "53200"
PROGRAM_LIMIT_EXCEEDED = "54000"
OBJECT_NOT_IN_PREREQUISITE_STATE = "55000"
LOCK_NOT_AVAILABLE = "55P03"
QUERY_CANCELED = "57014"
ADMIN_SHUTDOWN = "57P01"
INTERNAL_ERROR = "XX000"
FDW_ERROR = "HV000"

# Warning/notice codes
WARNING = "01000"
SUCCESSFUL_COMPLETION = "00000"


@dataclass
class PgError(Exception):
    """An error reported to the client as an ErrorResponse (or a notice).

    ``position`` is 1-based in characters of the query text, as PostgreSQL
    reports it; ``context`` maps to the C (where) field.
    """

    sqlstate: str
    message: str
    detail: str | None = None
    hint: str | None = None
    position: int | None = None
    context: str | None = None
    severity: str = "ERROR"
    extra: dict[str, int | str] = field(default_factory=dict)   # COPY's line, column and value
    #: the R field: PostgreSQL's C function that raised it; clients key on a few
    #: (asyncpg prepares again on RevalidateCachedQuery's "cached plan must not change result type")
    routine: str | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:  # pragma: no cover - debugging aid
        return f"{self.severity} {self.sqlstate}: {self.message}"


@dataclass
class Notice:
    """A NoticeResponse to send before the statement's result."""

    message: str
    sqlstate: str = SUCCESSFUL_COMPLETION
    severity: str = "NOTICE"
    detail: str | None = None
    hint: str | None = None



def invalid_utf8(data: bytes, at: int) -> PgError:
    """PostgreSQL's report_invalid_encoding: the bytes of the bad character at
    ``at``, as many as its lead byte announces (pg_utf_mblen), "0xc3 0x28"."""
    lead = data[at]
    n = 2 if lead & 0xE0 == 0xC0 else 3 if lead & 0xF0 == 0xE0 else 4 if lead & 0xF8 == 0xF0 else 1
    shown = " ".join(f"0x{b:02x}" for b in data[at:at + n])
    return PgError(CHARACTER_NOT_IN_REPERTOIRE, f'invalid byte sequence for encoding "UTF8": {shown}')
