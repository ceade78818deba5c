"""SQLAlchemy 2.x with the psycopg and asyncpg dialects: DDL, ORM session, reflection."""
from __future__ import annotations

import asyncio
import decimal

import pytest
from sqlalchemy import (Boolean, DateTime, ForeignKey, Index, Integer, MetaData, Numeric, String, Table, create_engine,
                        func, inspect, select, text)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


def make_models(prefix: str):
    class Base(DeclarativeBase):
        pass

    class Author(Base):
        __tablename__ = f"{prefix}_author"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String(50), index=True)
        active: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
        books: Mapped[list["Book"]] = relationship(back_populates="author", cascade="all, delete-orphan")

    class Book(Base):
        __tablename__ = f"{prefix}_book"
        id: Mapped[int] = mapped_column(primary_key=True)
        author_id: Mapped[int] = mapped_column(ForeignKey(f"{prefix}_author.id"))
        title: Mapped[str] = mapped_column(String(200))
        price = mapped_column(Numeric(10, 2))
        created = mapped_column(DateTime(timezone=True), server_default=func.now())
        author: Mapped[Author] = relationship(back_populates="books")
        __table_args__ = (Index(f"ix_{prefix}_book_author_title", "author_id", "title", unique=True),)

    return Base, Author, Book


def exercise_orm(session_factory, Author, Book):
    with session_factory() as s:
        a = Author(name="ann", books=[Book(title="one", price=decimal.Decimal("9.99")), Book(title="two")])
        s.add_all([a, Author(name="bob")])
        s.commit()
        ids = s.scalars(select(Author.id).order_by(Author.name)).all()
        assert len(ids) == 2
    with session_factory() as s:
        ann = s.scalars(select(Author).where(Author.name == "ann")).one()
        assert sorted(b.title for b in ann.books) == ["one", "two"]
        assert ann.active is True
        ann.name = "anne"
        ann.books[0].price = decimal.Decimal("5.00")
        s.commit()
    with session_factory() as s:
        assert s.scalars(select(Author.name).order_by(Author.name)).all() == ["anne", "bob"]
        n = s.scalar(select(func.count()).select_from(Book).join(Author).where(Author.name == "anne"))
        assert n == 2
        s.delete(s.scalars(select(Author).where(Author.name == "anne")).one())
        s.commit()
        assert s.scalar(select(func.count()).select_from(Book)) == 0
        assert s.scalar(select(func.count()).select_from(Author)) == 1
    with session_factory() as s:  # rollback
        s.add(Author(name="temp"))
        s.flush()
        s.rollback()
        assert s.scalar(select(func.count()).select_from(Author)) == 1


def check_reflection(insp, prefix: str, view: str):
    a, b = f"{prefix}_author", f"{prefix}_book"
    tables = insp.get_table_names()
    assert a in tables and b in tables
    assert view in insp.get_view_names() and view not in tables
    cols = {c["name"]: c for c in insp.get_columns(b)}
    assert list(cols) == ["id", "author_id", "title", "price", "created"]
    assert isinstance(cols["id"]["type"], Integer) and cols["id"]["nullable"] is False
    assert cols["title"]["type"].length == 200
    assert (cols["price"]["type"].precision, cols["price"]["type"].scale) == (10, 2)
    assert cols["created"]["type"].timezone is True and cols["created"]["default"] is not None
    assert "nextval" in cols["id"]["default"]
    assert {c["name"]: c["default"] for c in insp.get_columns(a)}["active"] == "true"
    assert insp.get_pk_constraint(b)["constrained_columns"] == ["id"]
    fks = insp.get_foreign_keys(b)
    assert [(f["constrained_columns"], f["referred_table"], f["referred_columns"]) for f in fks] == \
        [(["author_id"], a, ["id"])]
    idx = {i["name"]: i for i in insp.get_indexes(b)}
    assert idx[f"ix_{prefix}_book_author_title"]["column_names"] == ["author_id", "title"]
    assert idx[f"ix_{prefix}_book_author_title"]["unique"] is True
    assert [i["column_names"] for i in insp.get_indexes(a)] == [["name"]]
    assert [c["name"] for c in insp.get_columns(view)] == ["id", "name"]
    assert "SELECT" in insp.get_view_definition(view).upper()


def test_psycopg_dialect(ss_server, unique_name):
    prefix = unique_name("sa")
    view = f"{prefix}_v"
    Base, Author, Book = make_models(prefix)
    engine = create_engine(ss_server.url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        Base.metadata.create_all(engine)
        with engine.begin() as c:
            c.execute(text(f"CREATE VIEW {view} AS SELECT id, name FROM {prefix}_author"))
        exercise_orm(lambda: Session(engine), Author, Book)
        check_reflection(inspect(engine), prefix, view)
        md = MetaData()
        md.reflect(engine, only=[f"{prefix}_author", f"{prefix}_book", view], views=True)
        assert isinstance(md.tables[f"{prefix}_book"], Table)
        assert md.tables[f"{prefix}_book"].c.author_id.foreign_keys
        with engine.begin() as c:
            c.execute(text(f"DROP VIEW {view}"))
        Base.metadata.drop_all(engine)
        assert f"{prefix}_book" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()


def test_asyncpg_dialect(ss_server, unique_name):
    pytest.importorskip("greenlet")
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    prefix = unique_name("sa")
    view = f"{prefix}_v"
    Base, Author, Book = make_models(prefix)

    async def main():
        engine = create_async_engine(ss_server.url.replace("postgresql://", "postgresql+asyncpg://"))
        try:
            async with engine.begin() as conn:
                await conn.run_sync(Base.metadata.create_all)
                await conn.execute(text(f"CREATE VIEW {view} AS SELECT id, name FROM {prefix}_author"))
            async with AsyncSession(engine, expire_on_commit=False) as s:
                s.add_all([Author(name="ann", books=[Book(title="one", price=decimal.Decimal("1.50"))]), Author(name="bob")])
                await s.commit()
                ann = (await s.execute(select(Author).where(Author.name == "ann"))).scalar_one()
                ann.name = "anne"
                await s.commit()
                book = (await s.execute(select(Book))).scalar_one()
                assert book.price == decimal.Decimal("1.50") and book.created is not None
                await s.delete(book)
                await s.commit()
                names = (await s.execute(select(Author.name).order_by(Author.name))).scalars().all()
                assert names == ["anne", "bob"]
                assert (await s.execute(select(func.count()).select_from(Book))).scalar() == 0
            async with engine.connect() as conn:
                await conn.run_sync(lambda sc: check_reflection_no_rows(inspect(sc), prefix, view))
            async with engine.begin() as conn:
                await conn.execute(text(f"DROP VIEW {view}"))
                await conn.run_sync(Base.metadata.drop_all)
        finally:
            await engine.dispose()

    asyncio.run(asyncio.wait_for(main(), 120))


def check_reflection_no_rows(insp, prefix, view):
    check_reflection(insp, prefix, view)
