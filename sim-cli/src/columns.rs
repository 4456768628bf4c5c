//! Row groups written from columns whose Parquet encoding is chosen by
//! what they hold, for the tables of a million rows and more (attempts).
//!
//! Polars' writer does not know what a column holds, so for every row
//! group it estimates each text and float column's distinct values and,
//! for text, builds a dictionary by hashing every row. On the attempts
//! table that guessing cost more than the compression. Here the table
//! says what each column is: text from a handful of known values (the
//! run's names, an outcome, an edge) arrives as its dictionary's keys,
//! already built, and small integers (attempt numbers, pods) are made
//! the dictionary polars would make of them; polars encodes each
//! dictionary's values once, and the rows' keys are packed here, as
//! polars packs them but from a slice ([`keys_page`]); a value the same
//! on every row is a dictionary of one, its keys one run written once
//! per row group; a float that is a time is written byte-stream split,
//! its pages made here from the values ([`split_pages`]);
//! ids given in order are written as their differences. The file is
//! the one polars writes from the whole columns, but for the
//! byte-stream split. The Arrow schema written is the table's own, so a
//! text column reads back as `String`, whatever its encoding. Pages are
//! compressed here too ([`PageCompressor`]), with one zstd context per
//! file; the bucket tables, encoded as polars encodes them, have their
//! pages compressed here as well ([`write_frame`]).

use std::io::Write;
use std::sync::MutexGuard;

use polars::io::parquet::write::{BatchedWriter, RowGroupIterColumns, get_encodings};
use polars::prelude::{
    CompatLevel, DataFrame, DataType, Field, PlSmallStr, PolarsError, PolarsResult, Schema,
    SchemaExt,
};
use polars_arrow::array::{Array, BooleanArray, DictionaryArray, PrimitiveArray, Utf8ViewArray};
use polars_arrow::datatypes::{ArrowDataType, IntegerType};
use polars_arrow::types::NativeType;
use polars_parquet::parquet::CowBuffer;
use polars_parquet::parquet::encoding::hybrid_rle;
use polars_parquet::parquet::page::{
    CompressedDataPage, CompressedDictPage, CompressedPage, DataPage, DataPageHeader,
    DataPageHeaderV1,
};
use polars_parquet::parquet::schema::Repetition;
use polars_parquet::write::{
    CompressionOptions, DynIter, DynStreamingIterator, Encoding, FallibleStreamingIterator,
    FileWriter, Page, ParquetType, Version, WriteOptions, array_to_columns, write_def_levels,
};

/// One column of a row group: its name and type in the table's schema,
/// its values, and the encoding they are written with.
pub struct Encoded {
    name: PlSmallStr,
    dtype: DataType,
    array: Box<dyn Array>,
    encoding: Encoding,
    /// How the table's rows come from `array`.
    rows: Rows,
}

/// How a column's rows come from its array.
enum Rows {
    /// The array holds every row.
    All,
    /// The array is a dictionary of one value, which each of `n` rows
    /// holds (a column with one value).
    Repeat(usize),
    /// The array is a dictionary holding each value once, its keys 0, 1,
    /// ...; each row's key is here. polars encodes the values, and the
    /// rows' keys are written here ([`keys_page`]): polars' encoder takes
    /// them through generic iterators at about 26 instructions a key.
    Keys(Vec<u32>),
}

impl Encoded {
    /// Text as keys into `values` (a [`Dictionary`]'s): written as a
    /// Parquet dictionary, read back as `String`.
    pub fn text(name: &str, dictionary: Dictionary<'_>) -> Self {
        let values = Utf8ViewArray::from_slice_values(&dictionary.values);
        Self::keyed(name, DataType::String, values.boxed(), dictionary.keys)
    }

    /// `values` (each once) and each row's key into them: a Parquet
    /// dictionary whose keys are written here, not by polars.
    fn keyed(name: &str, dtype: DataType, values: Box<dyn Array>, keys: Vec<u32>) -> Self {
        let once = PrimitiveArray::from_vec((0..values.len() as u32).collect());
        let array = DictionaryArray::<u32>::try_from_keys(once, values, false)
            .expect("a key for each value");
        let mut column = Self::new(name, dtype, array.boxed(), Encoding::RleDictionary);
        column.rows = Rows::Keys(keys);
        column
    }

    /// The same text on each of `rows` rows: a dictionary of one value.
    pub fn constant_text(name: &str, value: &str, rows: usize) -> Self {
        let values = Utf8ViewArray::from_slice_values([value]);
        Self::repeated(name, DataType::String, values.boxed(), rows)
    }

    /// Floats with as many distinct values as rows (times, durations):
    /// no dictionary tried, written byte-stream split (Parquet's
    /// `BYTE_STREAM_SPLIT`: the values' first bytes, then their second
    /// bytes, ...). A time's sign, exponent and leading digits change
    /// little from row to row and its last bytes are noise; split apart,
    /// the first streams compress to almost nothing where plain values
    /// barely compress: the attempts table's three times take 23 % fewer
    /// bytes (`sim-cli/benches/README.md`).
    pub fn floats(name: &str, values: Vec<f64>) -> Self {
        let array = PrimitiveArray::from_vec(values);
        Self::new(
            name,
            DataType::Float64,
            array.boxed(),
            Encoding::ByteStreamSplit,
        )
    }

    /// Floats, some missing: written plain.
    pub fn optional_floats(name: &str, values: &[Option<f64>]) -> Self {
        let array: PrimitiveArray<f64> = values.iter().collect();
        Self::new(name, DataType::Float64, array.boxed(), Encoding::Plain)
    }

    /// `rows` floats, every one missing: written as
    /// [`Encoded::optional_floats`] writes them, with no absences built
    /// one by one first.
    pub fn missing_floats(name: &str, rows: usize) -> Self {
        let array =
            PrimitiveArray::<f64>::new_null(polars_arrow::datatypes::ArrowDataType::Float64, rows);
        Self::new(name, DataType::Float64, array.boxed(), Encoding::Plain)
    }

    /// The same integer on each of `rows` rows: a dictionary of one value.
    pub fn constant<T: NativeType>(name: &str, dtype: DataType, value: T, rows: usize) -> Self {
        let values = PrimitiveArray::from_vec(vec![value]);
        Self::repeated(name, dtype, values.boxed(), rows)
    }

    /// `value` (one row) on each of `rows` rows: a dictionary of that one
    /// value, whose pages are written once for the row group
    /// ([`keys_page`]) rather than encoded row by row.
    fn repeated(name: &str, dtype: DataType, value: Box<dyn Array>, rows: usize) -> Self {
        let keys = PrimitiveArray::from_vec(vec![0u32]);
        let array = DictionaryArray::<u32>::try_from_keys(keys, value, false)
            .expect("one value, its key 0");
        let mut column = Self::new(name, dtype, array.boxed(), Encoding::RleDictionary);
        column.rows = Rows::Repeat(rows);
        column
    }

    /// Integers that mostly rise by little from row to row (ids given in
    /// order): written as their differences, packed.
    pub fn rising<T: NativeType>(name: &str, dtype: DataType, values: Vec<T>) -> Self {
        let array = PrimitiveArray::from_vec(values);
        Self::new(name, dtype, array.boxed(), Encoding::DeltaBinaryPacked)
    }

    /// Small integers (attempt numbers, pods): a dictionary of the
    /// distinct values in ascending order, its keys written here, when
    /// polars' writer would make that dictionary itself ([`by_range`]);
    /// otherwise left to the writer.
    pub fn ints(name: &str, values: Vec<u32>) -> Self {
        match by_range(values) {
            Ok((distinct, keys)) => Self::keyed(
                name,
                DataType::UInt32,
                PrimitiveArray::from_vec(distinct).boxed(),
                keys,
            ),
            Err(values) => Self::new(
                name,
                DataType::UInt32,
                PrimitiveArray::from_vec(values).boxed(),
                Encoding::RleDictionary,
            ),
        }
    }

    /// Booleans: a bit each, written plain.
    pub fn bools(name: &str, values: &[bool]) -> Self {
        let array = BooleanArray::from_slice(values);
        Self::new(name, DataType::Boolean, array.boxed(), Encoding::Plain)
    }

    fn new(name: &str, dtype: DataType, array: Box<dyn Array>, encoding: Encoding) -> Self {
        Encoded {
            name: name.into(),
            dtype,
            array,
            encoding,
            rows: Rows::All,
        }
    }

    /// The rows the table holds of this column.
    fn len(&self) -> usize {
        match &self.rows {
            Rows::All => self.array.len(),
            Rows::Repeat(n) => *n,
            Rows::Keys(keys) => keys.len(),
        }
    }
}

/// The dictionary polars' writer makes of unsigned integers whose range
/// spans at most 2^16 values, when it holds at most 512 of them or fewer
/// than three in four rows are distinct: the distinct values in ascending
/// order and each row's key (made from `values` in place). The values
/// back where the writer would decide otherwise (the same decision, so
/// the file is the one polars writes).
fn by_range(mut values: Vec<u32>) -> Result<(Vec<u32>, Vec<u32>), Vec<u32>> {
    if values.is_empty() {
        return Err(values);
    }
    // A fold rather than `min()` and `max()`: one pass, and vectorised.
    let (min, max) = values
        .iter()
        .fold((u32::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let span = (max - min) as usize;
    if span > usize::from(u16::MAX) {
        return Err(values);
    }
    let mut seen = vec![false; span + 1];
    for &v in &values {
        seen[(v - min) as usize] = true;
    }
    let distinct: Vec<u32> = (min..=max).filter(|&v| seen[(v - min) as usize]).collect();
    let worth = distinct.len() <= 512 || (distinct.len() as f64) / (values.len() as f64) < 0.75;
    if !worth {
        return Err(values);
    }
    let mut key = vec![0u32; span + 1];
    for (k, &v) in distinct.iter().enumerate() {
        key[(v - min) as usize] = k as u32;
    }
    for v in &mut values {
        *v = key[(*v - min) as usize];
    }
    Ok((distinct, values))
}

/// The table's schema, from its columns.
pub fn schema(columns: &[Encoded]) -> Schema {
    columns
        .iter()
        .map(|c| Field::new(c.name.clone(), c.dtype.clone()))
        .collect()
}

/// A text column built as its dictionary: the distinct values in the order
/// first seen, and each row's key. For columns of a few values (outcomes,
/// edges), found by a short scan rather than a hash.
#[derive(Default)]
pub struct Dictionary<'a> {
    values: Vec<&'a str>,
    keys: Vec<u32>,
}

impl<'a> Dictionary<'a> {
    /// An empty column with room for `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        Dictionary {
            values: Vec::new(),
            keys: Vec::with_capacity(rows),
        }
    }

    /// Appends a row holding `value`, found by a scan of the values seen:
    /// for columns of a handful of values.
    pub fn push(&mut self, value: &'a str) {
        // The values are mostly the same `&'static str`s: the same
        // address and length is the same text, with no bytes compared.
        // Addresses are scanned first, so that the values passed over
        // on the way to a match have no bytes compared either (the
        // values differ, so the first match either way is the one).
        let key = match self.values.iter().position(|v| std::ptr::eq(*v, value)) {
            Some(k) => k as u32,
            None => self.find_or_add(value),
        };
        self.keys.push(key);
    }

    /// Appends a row holding `names[index]` (`""` past its end), its key
    /// found through `keys`, one slot per name: for columns whose values
    /// the caller numbers (a graph's edges, up to thousands), where a
    /// scan per row would grow with the graph.
    pub fn push_indexed(&mut self, index: usize, names: &'a [String], keys: &mut IndexedKeys) {
        let slot = index.min(names.len());
        let key = match keys.0.get(slot) {
            Some(&Some(k)) => k,
            _ => self.add_indexed(slot, names, keys),
        };
        self.keys.push(key);
    }

    /// A new key for `names[slot]` (`""` past its end), kept in `keys`.
    #[cold]
    fn add_indexed(&mut self, slot: usize, names: &'a [String], keys: &mut IndexedKeys) -> u32 {
        if keys.0.len() <= slot {
            keys.0.resize(slot + 1, None);
        }
        let k = self.add(names.get(slot).map_or("", String::as_str));
        keys.0[slot] = Some(k);
        k
    }

    /// The key of `value`, found by its bytes, or a new one.
    #[cold]
    fn find_or_add(&mut self, value: &'a str) -> u32 {
        match self.values.iter().position(|v| *v == value) {
            Some(k) => k as u32,
            None => self.add(value),
        }
    }

    fn add(&mut self, value: &'a str) -> u32 {
        self.values.push(value);
        (self.values.len() - 1) as u32
    }
}

/// The keys a [`Dictionary`] gave to numbered names so far (see
/// [`Dictionary::push_indexed`]).
#[derive(Default)]
pub struct IndexedKeys(Vec<Option<u32>>);

/// Writes `columns` (`rows` rows each, in the order of the schema `writer`
/// was made with) as one row group: each encoded as it says, compressed
/// as the writer's options say by `compressor` (one per file).
pub fn write_row_group<W: Write>(
    writer: &mut BatchedWriter<W>,
    rows: usize,
    columns: Vec<Encoded>,
    compressor: &mut PageCompressor,
) -> PolarsResult<()> {
    if rows == 0 {
        return Ok(());
    }
    let (types, mut file) = open_file(writer)?;
    let options = file.options();
    let mut chunks = Vec::with_capacity(columns.len());
    for (column, type_) in columns.into_iter().zip(types) {
        debug_assert_eq!(column.len(), rows, "{}", column.name);
        if let Some(values) = split_values(&column) {
            let pages = split_pages(values, &type_, options)?
                .into_iter()
                .map(|page| compressor.compress(page, options.compression))
                .collect::<PolarsResult<Vec<_>>>()?;
            chunks.push(column_chunk(pages));
            continue;
        }
        // polars writes no byte-stream split pages: such a column is
        // written plain and its pages split here.
        let split = column.encoding == Encoding::ByteStreamSplit;
        // A dictionary column's values, once each.
        let values = column.array.len();
        let encoding = if split {
            Encoding::Plain
        } else {
            column.encoding
        };
        for encoded in array_to_columns(column.array, type_, options, &[encoding])? {
            let mut pages = Vec::new();
            for page in encoded {
                let page = page?;
                let page = match (split, &column.rows) {
                    (true, _) => split_streams(page)?,
                    (false, Rows::Repeat(rows)) => keys_page(page, values, *rows, None)?,
                    (false, Rows::Keys(keys)) => keys_page(page, values, keys.len(), Some(keys))?,
                    (false, Rows::All) => page,
                };
                pages.push(compressor.compress(page, options.compression)?);
            }
            chunks.push(column_chunk(pages));
        }
    }
    let group: RowGroupIterColumns<'static, PolarsError> = DynIter::new(chunks.into_iter());
    file.write(rows as u64, group)
}

/// Writes `df` as polars' `BatchedWriter::write_batch` does, a row group
/// per chunk with polars' own encodings (the same file), but with its
/// pages compressed by `compressor`, one zstd context for the file:
/// polars makes a context for every page, and a short run's bucket
/// tables are a page or two per column (158 columns in the timeseries),
/// so that a sweep of short cells spent a quarter of its time making
/// contexts.
pub fn write_frame<W: Write>(
    writer: &mut BatchedWriter<W>,
    df: &DataFrame,
    compressor: &mut PageCompressor,
) -> PolarsResult<()> {
    let encodings = get_encodings(&df.schema().to_arrow(CompatLevel::newest()));
    let (types, mut file) = open_file(writer)?;
    let options = file.options();
    for batch in df.iter_chunks(CompatLevel::newest(), false) {
        let rows = batch.len();
        if rows == 0 {
            continue;
        }
        let mut chunks = Vec::with_capacity(batch.columns().len());
        for ((array, type_), encoding) in batch.columns().iter().zip(&types).zip(encodings.iter()) {
            let (cast, encoding) = without_guessing(array.as_ref(), encoding);
            let array = cast.as_ref().unwrap_or(array);
            for encoded in array_to_columns(array, type_.clone(), options, encoding)? {
                let pages = encoded
                    .map(|page| compressor.compress(page?, options.compression))
                    .collect::<PolarsResult<Vec<_>>>()?;
                chunks.push(column_chunk(pages));
            }
        }
        let group: RowGroupIterColumns<'static, PolarsError> = DynIter::new(chunks.into_iter());
        file.write(rows as u64, group)?;
    }
    Ok(())
}

/// A column's array cast to another form, if it was, and its encoding.
type Decided<'a> = (Option<Box<dyn Array>>, &'a [Encoding]);

/// A column of `write_frame` as polars would write it, without the
/// estimate polars makes first of how many distinct values it holds
/// (a HyperLogLog over 2^14 registers, about 10^5 instructions a column
/// however short: a fifth of a short run's whole process). The estimate
/// only picks between a dictionary and plain values, and here the
/// outcome is known without it:
/// - a float column is written plain whatever the estimate: polars then
///   casts it to a dictionary, which it cannot do for floats, and falls
///   back to plain values;
/// - a column of text of 128 rows or fewer is made a dictionary whatever
///   the estimate (polars heeds it only past 128 rows): it is cast here,
///   as polars casts it, and written as the dictionary it is.
///
/// Every other column goes polars' way, untouched. Both rules are
/// polars-parquet's of this version: the test of `write_frame` against
/// polars' own writer (low-cardinality floats, text of 128 and 129 rows)
/// fails if a later one makes floats dictionaries or moves the bound.
///
/// Gives the array cast, if it was, and the encoding to write.
fn without_guessing<'a>(array: &dyn Array, encoding: &'a [Encoding]) -> Decided<'a> {
    /// polars-parquet's bound (`encode_as_dictionary_optional`): at most
    /// this many rows, a column is a dictionary whatever its estimate.
    const ALWAYS_DICTIONARY: usize = 128;
    if encoding != [Encoding::RleDictionary] {
        return (None, encoding);
    }
    match array.dtype() {
        ArrowDataType::Float32 | ArrowDataType::Float64 => (None, &[Encoding::Plain][..]),
        ArrowDataType::Utf8View | ArrowDataType::BinaryView
            if !array.is_empty() && array.len() <= ALWAYS_DICTIONARY =>
        {
            let dictionary = ArrowDataType::Dictionary(
                IntegerType::UInt32,
                Box::new(array.dtype().clone()),
                false,
            );
            // As polars: a column it cannot cast is written plain.
            match polars_compute::cast::cast(array, &dictionary, Default::default()) {
                Ok(cast) => (Some(cast), encoding),
                Err(_) => (None, &[Encoding::Plain][..]),
            }
        }
        _ => (None, encoding),
    }
}

/// The values of a float column to be written byte-stream split, when
/// they are all there (no nulls) and lie in memory little endian, as
/// Parquet writes them: such a column's pages are made here from the
/// values ([`split_pages`]); any other goes polars' way.
fn split_values(column: &Encoded) -> Option<&[f64]> {
    if column.encoding != Encoding::ByteStreamSplit
        || !matches!(column.rows, Rows::All)
        || cfg!(target_endian = "big")
    {
        return None;
    }
    let array = column
        .array
        .as_any()
        .downcast_ref::<PrimitiveArray<f64>>()?;
    (array.validity().is_none()).then(|| array.values().as_slice())
}

/// A float column's pages, byte-stream split, made straight from its
/// values: the pages polars' writer would cut (as many rows as fit its
/// page size at 9 bytes a row: its estimate of a float, 8, plus one), each
/// page's values split once into their 8 streams. Polars would first
/// encode each page plain, finding its minimum and maximum at about 14
/// instructions a value, and the streams would then be split from that
/// copy ([`split_streams`]). Here one pass finds the page's extremes, and
/// polars writes the page header, statistics included, for those two
/// values alone: the statistics of a page are its minimum and maximum
/// (Parquet's rule for zeros applied by polars to either), so the header
/// is the one it writes for the whole page, bar the count and the
/// encoding set here. A page holding NaN takes polars' own way.
fn split_pages(
    values: &[f64],
    type_: &ParquetType,
    options: WriteOptions,
) -> PolarsResult<Vec<Page>> {
    const WIDTH: usize = 8;
    // polars-parquet's `row_slice_ranges`, for a float column without
    // nulls (its estimate: 8 bytes a row).
    let page_size = options
        .data_page_size
        .unwrap_or(1024 * 1024)
        .min((1 << 31) - (1 << 25));
    let rows_per_page = (page_size / (WIDTH + 1)).max(1);
    let mut pages = Vec::with_capacity(values.len().div_ceil(rows_per_page));
    // The one plain page polars writes of `values` (no more than a page).
    let polars_page = |values: Vec<f64>| -> PolarsResult<Page> {
        let array = PrimitiveArray::from_vec(values).boxed();
        let mut encoded = array_to_columns(array, type_.clone(), options, &[Encoding::Plain])?;
        encoded
            .first_mut()
            .and_then(Iterator::next)
            .ok_or_else(|| PolarsError::ComputeError("a float column without a page".into()))?
    };
    for chunk in values.chunks(rows_per_page) {
        let Some((lo, hi)) = extremes(chunk) else {
            pages.push(split_streams(polars_page(chunk.to_vec())?)?);
            continue;
        };
        let Page::Data(page) = polars_page(vec![lo, hi])? else {
            return Err(PolarsError::ComputeError(
                "a float column's first page is not data".into(),
            ));
        };
        let (mut header, optional) = version_one(&page).ok_or_else(|| {
            PolarsError::ComputeError("a float column's page is not version 1".into())
        })?;
        header.num_values = i32::try_from(chunk.len())
            .map_err(|_| PolarsError::ComputeError("too many rows in a page".into()))?;
        header.encoding = Encoding::ByteStreamSplit.into();
        let mut buffer = Vec::with_capacity(16 + chunk.len() * WIDTH);
        write_def_levels(&mut buffer, optional, None, chunk.len(), Version::V1)?;
        let levels = buffer.len();
        buffer.resize(levels + chunk.len() * WIDTH, 0);
        // The values' bytes as they lie in memory: little endian
        // (`split_values`), as Parquet's plain encoding wants.
        split_bytes(bytemuck::cast_slice(chunk), &mut buffer[levels..]);
        pages.push(Page::Data(DataPage::new(
            DataPageHeader::V1(header),
            CowBuffer::Owned(buffer),
            page.descriptor,
            chunk.len(),
        )));
    }
    Ok(pages)
}

/// The least and greatest of `values` (not empty), or `None` if one is
/// NaN. One pass, four lanes at a time (`f64::min` would check each
/// value for NaN on its own, at 16 instructions a value).
fn extremes(values: &[f64]) -> Option<(f64, f64)> {
    const LANES: usize = 4;
    let (mut lo, mut hi) = ([f64::INFINITY; LANES], [f64::NEG_INFINITY; LANES]);
    let mut nan = [false; LANES];
    let chunks = values.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for k in 0..LANES {
            let v = chunk[k];
            lo[k] = if v < lo[k] { v } else { lo[k] };
            hi[k] = if v > hi[k] { v } else { hi[k] };
            nan[k] |= v.is_nan();
        }
    }
    for (k, &v) in rest.iter().enumerate() {
        lo[k] = if v < lo[k] { v } else { lo[k] };
        hi[k] = if v > hi[k] { v } else { hi[k] };
        nan[k] |= v.is_nan();
    }
    if values.is_empty() || nan.iter().any(|&n| n) {
        return None;
    }
    let lo = lo
        .into_iter()
        .fold(f64::INFINITY, |a, b| if b < a { b } else { a });
    let hi = hi
        .into_iter()
        .fold(f64::NEG_INFINITY, |a, b| if b > a { b } else { a });
    Some((lo, hi))
}

/// Compresses a file's pages with one zstd context and one output buffer
/// for them all. polars' own compressor makes a new context for every
/// page and zeroes an output buffer the size of the page before each
/// compression: on the attempts table, a fresh allocation to zero and
/// fault in twice per page.
#[derive(Default)]
pub struct PageCompressor {
    /// The context, and the level it is set to.
    zstd: Option<(i32, zstd::bulk::Compressor<'static>)>,
    /// Where a page is compressed before its bytes are copied out.
    scratch: Vec<u8>,
}

impl PageCompressor {
    /// `page` compressed as `compression` says: zstd (at the level given,
    /// zstd's default otherwise; a byte-stream split page at
    /// [`SPLIT_LEVEL`]) or none.
    fn compress(
        &mut self,
        page: Page,
        compression: CompressionOptions,
    ) -> PolarsResult<CompressedPage> {
        let unsupported = || {
            PolarsError::ComputeError(format!("cannot compress a page as {compression:?}").into())
        };
        let level = match compression {
            CompressionOptions::Uncompressed => None,
            CompressionOptions::Zstd(level) => Some(level.map_or(0, |l| l.compression_level())),
            _ => return Err(unsupported()),
        };
        let mut pack = |bytes: CowBuffer, split: bool| -> PolarsResult<(CowBuffer, usize)> {
            let Some(level) = level else {
                let len = bytes.len();
                return Ok((bytes, len));
            };
            let level = if split { SPLIT_LEVEL } else { level };
            let zstd = match &mut self.zstd {
                Some((l, z)) if *l == level => z,
                Some((l, z)) => {
                    z.set_compression_level(level).map_err(|_| unsupported())?;
                    *l = level;
                    z
                }
                slot => {
                    let z = zstd::bulk::Compressor::new(level).map_err(|_| unsupported())?;
                    &mut slot.insert((level, z)).1
                }
            };
            self.scratch.clear();
            self.scratch
                .reserve(zstd::zstd_safe::compress_bound(bytes.len()));
            zstd.compress_to_buffer(&bytes, &mut self.scratch)
                .map_err(|e| PolarsError::ComputeError(format!("zstd: {e}").into()))?;
            Ok((CowBuffer::Owned(self.scratch.clone()), bytes.len()))
        };
        Ok(match page {
            Page::Data(mut page) => {
                // Version 1 pages, as polars writes them, are compressed
                // whole, their levels with their values.
                if version_one(&page).is_none() {
                    return Err(PolarsError::ComputeError(
                        "cannot compress a version 2 page".into(),
                    ));
                }
                let header = page.header().clone();
                let rows = page.num_rows().unwrap_or(page.num_values());
                let split = page.encoding() == Encoding::ByteStreamSplit;
                let bytes = CowBuffer::Owned(std::mem::take(page.buffer_mut()));
                let (buffer, size) = pack(bytes, split)?;
                CompressedPage::Data(CompressedDataPage::new(
                    header,
                    buffer,
                    compression.into(),
                    size,
                    page.descriptor,
                    rows,
                ))
            }
            Page::Dict(page) => {
                let (buffer, size) = pack(page.buffer, false)?;
                CompressedPage::Dict(CompressedDictPage::new(
                    buffer,
                    compression.into(),
                    size,
                    page.num_values,
                    page.is_sorted,
                ))
            }
        })
    }
}

/// The zstd level of a byte-stream split page: zstd's first fast level.
/// On the attempts table's times (a storm's 1.2 M attempts, 29 MB split),
/// zstd's own benchmark gives 1.39× the speed of level 1 and 0.2 %
/// fewer bytes (the low bytes' streams are noise, which the fast levels
/// give up on sooner); the other pages keep the writer's level, which
/// packs their keys and differences better.
const SPLIT_LEVEL: i32 = -1;

/// The writer's Parquet types of the table's columns, and its file,
/// locked for a row group.
fn open_file<W: Write>(
    writer: &mut BatchedWriter<W>,
) -> PolarsResult<(Vec<ParquetType>, MutexGuard<'_, FileWriter<W>>)> {
    let types = writer.parquet_schema().fields().to_vec();
    let file = writer
        .get_writer()
        .lock()
        .map_err(|_| PolarsError::ComputeError("a previous write panicked".into()))?;
    Ok((types, file))
}

/// A column chunk of pages compressed already, as the file writer takes it.
fn column_chunk(
    pages: Vec<CompressedPage>,
) -> PolarsResult<DynStreamingIterator<'static, CompressedPage, PolarsError>> {
    Ok(DynStreamingIterator::new(Pages {
        pages: pages.into_iter(),
        current: None,
    }))
}

/// One column chunk's pages, compressed already, handed to the file
/// writer one at a time.
struct Pages {
    pages: std::vec::IntoIter<CompressedPage>,
    current: Option<CompressedPage>,
}

impl FallibleStreamingIterator for Pages {
    type Item = CompressedPage;
    type Error = PolarsError;

    fn advance(&mut self) -> PolarsResult<()> {
        self.current = self.pages.next();
        Ok(())
    }

    fn get(&self) -> Option<&CompressedPage> {
        self.current.as_ref()
    }
}

/// A version 1 page's header (the version polars writes, the only one
/// rewritten or compressed here) and whether its column is optional (its
/// page then starts with definition levels).
fn version_one(page: &DataPage) -> Option<(DataPageHeaderV1, bool)> {
    let DataPageHeader::V1(header) = page.header() else {
        return None;
    };
    let optional = page.descriptor.primitive_type.field_info.repetition == Repetition::Optional;
    Some((header.clone(), optional))
}

/// A plain page of 8-byte values rewritten byte-stream split: the same
/// levels, statistics and values, each value's byte `k` moved to stream
/// `k`. A dictionary page passes through.
fn split_streams(page: Page) -> PolarsResult<Page> {
    const WIDTH: usize = 8;
    let unexpected = |what: &str| {
        PolarsError::ComputeError(
            format!("cannot split a column's page into streams: {what}").into(),
        )
    };
    let Page::Data(page) = page else {
        return Ok(page);
    };
    // In a version 1 page the values follow the definition levels'
    // 4-byte length and the levels (none for a required column).
    let (mut header, optional) = version_one(&page).ok_or_else(|| unexpected("version 2"))?;
    if page.encoding() != Encoding::Plain {
        return Err(unexpected("not plain"));
    }
    let plain = page.buffer();
    let levels = match plain.get(..4) {
        _ if !optional => 0,
        Some(&[a, b, c, d]) => 4 + u32::from_le_bytes([a, b, c, d]) as usize,
        _ => return Err(unexpected("no levels")),
    };
    let values = match plain.get(levels..) {
        Some(v) if v.len() % WIDTH == 0 => v,
        _ => return Err(unexpected("not 8-byte values")),
    };
    let mut buffer = vec![0u8; plain.len()];
    buffer[..levels].copy_from_slice(&plain[..levels]);
    split_bytes(values, &mut buffer[levels..]);
    header.encoding = Encoding::ByteStreamSplit.into();
    let rows = page.num_rows().unwrap_or(page.num_values());
    Ok(Page::Data(DataPage::new(
        DataPageHeader::V1(header),
        CowBuffer::Owned(buffer),
        page.descriptor,
        rows,
    )))
}

/// The data page of a dictionary column for its `rows` rows, made from
/// the page polars wrote for its `values` values once each (keys 0, 1,
/// ...): the same header and statistics (those of the dictionary's
/// values, as polars gives every page of the column), every row
/// defined, then each row's key from `keys`, packed as polars packs
/// them ([`encode_keys`]). `None`: a dictionary of one value, every key
/// 0, one run with no key written per row. The dictionary page passes
/// through. The values must fit one page (polars cuts pages at 1 MB of
/// keys; a dictionary here holds at most 2^16 small integers, or a
/// graph's names): a second page would repeat the rows.
fn keys_page(page: Page, values: usize, rows: usize, keys: Option<&[u32]>) -> PolarsResult<Page> {
    let Page::Data(page) = page else {
        return Ok(page);
    };
    let unexpected = |what: &str| {
        PolarsError::ComputeError(format!("cannot write a column's keys: {what}").into())
    };
    let (mut header, optional) = version_one(&page).ok_or_else(|| unexpected("version 2"))?;
    if page.encoding() != Encoding::RleDictionary {
        return Err(unexpected("not a dictionary"));
    }
    if page.num_values() != values {
        return Err(unexpected("a dictionary's values in more than one page"));
    }
    let most = match keys {
        // A fold rather than `max()`: vectorised.
        Some(keys) => keys.iter().fold(0, |m, &k| m.max(k)),
        None if values == 1 => 0,
        None => return Err(unexpected("a repeated value not alone in its dictionary")),
    };
    if most as usize >= values {
        return Err(unexpected("a key past the dictionary"));
    }
    header.num_values = i32::try_from(rows).map_err(|_| unexpected("too many rows"))?;
    let bits = 32 - most.leading_zeros();
    let mut buffer = Vec::with_capacity(16 + rows * bits as usize / 8);
    write_def_levels(&mut buffer, optional, None, rows, Version::V1)?;
    buffer.push(bits as u8);
    match keys {
        Some(keys) => encode_keys(&mut buffer, keys, bits),
        None => <u32 as hybrid_rle::Encoder<u32>>::run_length_encode(&mut buffer, rows, 0, 0),
    }
    .map_err(|e| unexpected(&e.to_string()))?;
    Ok(Page::Data(DataPage::new(
        DataPageHeader::V1(header),
        CowBuffer::Owned(buffer),
        page.descriptor,
        rows,
    )))
}

/// `keys` written to `out` as Parquet's RLE/bit-packing hybrid of
/// `bits`-bit values, run for run and byte for byte as polars'
/// `hybrid_rle::encode` writes them (a repeat of more than eight values
/// is a run, whatever comes between is packed eight values at a time, at
/// most 8,192 in a packed run), read from the slice rather than through
/// an iterator and a copy of every value: polars keeps a buffer of the
/// values since its last run, which here is always the slice from
/// `start`.
fn encode_keys(out: &mut Vec<u8>, keys: &[u32], bits: u32) -> std::io::Result<()> {
    use hybrid_rle::Encoder;
    /// polars' longest packed run.
    const MOST_PACKED: usize = 8 * 1024;
    let pack = |out: &mut Vec<u8>, values: &[u32]| {
        u32::bitpacked_encode(out, values.iter().copied(), bits as usize)
    };
    // The same state as polars' encoder: the values buffered are
    // `keys[start..start + buffered]`, the first `packed` of them the
    // ones to pack before the repeat that follows; `repeats` counts the
    // run of `previous` so far.
    let (mut repeats, mut previous) = (0usize, 0u32);
    let (mut start, mut buffered, mut packed) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while i < keys.len() {
        let key = keys[i];
        if key == previous {
            repeats += 1;
            if repeats > 8 {
                // The rest of a run already long enough is counted, not
                // buffered: found at once rather than key by key.
                let rest = run_of(&keys[i + 1..], key);
                repeats += rest;
                i += 1 + rest;
                continue;
            }
            if repeats == 8 {
                // A run long enough to be one: what is packed before it
                // takes enough of it to make whole groups of eight.
                let padding = (8 - packed % 8) % 8;
                repeats -= padding;
                packed += padding;
            }
        } else if repeats > 8 {
            if packed > 0 {
                pack(out, &keys[start..start + packed])?;
                packed = 0;
            }
            u32::run_length_encode(out, repeats, previous, bits)?;
            repeats = 1;
            buffered = 0;
        } else {
            packed = buffered;
            repeats = 1;
        }
        if buffered == MOST_PACKED {
            pack(out, &keys[start..start + MOST_PACKED])?;
            repeats = 1;
            buffered = 0;
            packed = 0;
        }
        if buffered == 0 {
            start = i;
        }
        previous = key;
        buffered += 1;
        i += 1;
    }
    if repeats <= 8 {
        packed = buffered;
    }
    if packed > 0 {
        pack(out, &keys[start..start + packed])?;
    }
    if repeats > 8 {
        u32::run_length_encode(out, repeats, previous, bits)?;
    }
    Ok(())
}

/// How many of `keys`, from the first, are `key`: sixteen compared at a
/// time (vectorised), then one by one.
fn run_of(keys: &[u32], key: u32) -> usize {
    let mut n = 0;
    for chunk in keys.chunks_exact(16) {
        if chunk.iter().any(|&k| k != key) {
            break;
        }
        n += 16;
    }
    n + keys[n..].iter().take_while(|&&k| k == key).count()
}

/// `values` (8-byte values, little endian) written to `split` (as long)
/// as 8 streams, one after the other: stream `k` holds byte `k` of every
/// value, in order.
fn split_bytes(values: &[u8], split: &mut [u8]) {
    const WIDTH: usize = 8;
    let n = values.len() / WIDTH;
    debug_assert_eq!(split.len(), n * WIDTH);
    // Eight values at a time: their 8 × 8 bytes transposed in registers,
    // then one 8-byte write per stream (a byte at a time cost five
    // instructions a byte).
    let blocks = n / WIDTH;
    for b in 0..blocks {
        let mut rows = [0u64; WIDTH];
        for (j, row) in rows.iter_mut().enumerate() {
            let at = (b * WIDTH + j) * WIDTH;
            *row = u64::from_le_bytes(values[at..at + WIDTH].try_into().expect("8 bytes"));
        }
        let streams = transpose(rows);
        for (k, word) in streams.iter().enumerate() {
            let at = k * n + b * WIDTH;
            split[at..at + WIDTH].copy_from_slice(&word.to_le_bytes());
        }
    }
    for i in blocks * WIDTH..n {
        for k in 0..WIDTH {
            split[k * n + i] = values[i * WIDTH + k];
        }
    }
}

/// The 8 × 8 byte matrix whose row `j` is `rows[j]`'s bytes (byte `k`
/// the `k`-th least significant), transposed: row `k` of the result holds
/// byte `k` of every input row, row `j`'s in its byte `j`. Three rounds of
/// swapping blocks across the diagonal (4 bytes, then 2, then 1).
fn transpose(mut r: [u64; 8]) -> [u64; 8] {
    const LOW4: u64 = 0x0000_0000_ffff_ffff;
    const LOW2: u64 = 0x0000_ffff_0000_ffff;
    const LOW1: u64 = 0x00ff_00ff_00ff_00ff;
    for j in 0..4 {
        let (a, b) = (r[j], r[j + 4]);
        r[j] = (a & LOW4) | (b << 32);
        r[j + 4] = (a >> 32) | (b & !LOW4);
    }
    for j in [0, 1, 4, 5] {
        let (a, b) = (r[j], r[j + 2]);
        r[j] = (a & LOW2) | ((b & LOW2) << 16);
        r[j + 2] = ((a >> 16) & LOW2) | (b & !LOW2);
    }
    for j in [0, 2, 4, 6] {
        let (a, b) = (r[j], r[j + 1]);
        r[j] = (a & LOW1) | ((b & LOW1) << 8);
        r[j + 1] = ((a >> 8) & LOW1) | (b & !LOW1);
    }
    r
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;

    use polars::prelude::*;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "stormsim-columns-{name}-{}.parquet",
            std::process::id()
        ))
    }

    /// One row group of every kind of column; `base` moves the values so
    /// that two groups differ.
    fn group(base: u64) -> (usize, Vec<Encoded>) {
        let mut outcome = Dictionary::with_capacity(5);
        for v in ["timeout", "success", "timeout", "cancelled", "success"] {
            outcome.push(v);
        }
        let columns = vec![
            Encoded::constant_text("run_id", "c0ffee", 5),
            Encoded::constant("seed", DataType::UInt64, 42u64, 5),
            // Falling, extremes: differences that wrap.
            Encoded::rising(
                "request",
                DataType::UInt64,
                vec![base + 3, base + 1, u64::MAX, 0, base],
            ),
            Encoded::ints("attempt", vec![1u32, 2, 1, 3, 1]),
            Encoded::bools("hedge", &[false, true, false, false, true]),
            Encoded::floats("start_s", vec![0.5, 1e-9, -0.0, base as f64, f64::MAX]),
            Encoded::optional_floats("cost", &[Some(1.5), None, Some(0.0), None, None]),
            Encoded::text("outcome", outcome),
        ];
        (5, columns)
    }

    fn write(path: &PathBuf, groups: Vec<(usize, Vec<Encoded>)>) {
        let schema = schema(&group(0).1);
        let file = fs::File::create(path).unwrap();
        let mut w = ParquetWriter::new(file).batched(&schema).unwrap();
        let mut compressor = PageCompressor::default();
        for (rows, columns) in groups {
            write_row_group(&mut w, rows, columns, &mut compressor).unwrap();
        }
        w.finish().unwrap();
    }

    /// A frame written by `write_frame` is the file polars' own
    /// `write_batch` writes, byte for byte: text, integers, floats with
    /// and without gaps, booleans, in two chunks (two row groups), zstd
    /// and uncompressed.
    #[test]
    fn a_frame_written_with_one_context_is_polars_own_file() {
        let chunk = |base: u64, n: usize| {
            let f = |i: usize| (base as f64 + i as f64) / 3.0;
            DataFrame::new(
                n,
                vec![
                    Column::new("run_id".into(), vec!["c0ffee"; n]),
                    Column::new(
                        "node".into(),
                        (0..n).map(|i| format!("a->n{}", i % 7)).collect::<Vec<_>>(),
                    ),
                    Column::new("t_s".into(), (0..n).map(f).collect::<Vec<_>>()),
                    Column::new(
                        "p99".into(),
                        (0..n)
                            .map(|i| (i % 5 != 0).then(|| f(i)))
                            .collect::<Vec<_>>(),
                    ),
                    Column::new(
                        "count".into(),
                        (0..n as u64).map(|i| base + i % 11).collect::<Vec<_>>(),
                    ),
                    Column::new("up".into(), (0..n).map(|i| i % 3 == 0).collect::<Vec<_>>()),
                    Column::new(
                        "rate".into(),
                        (0..n).map(|i| (i % 4) as f32 / 2.0).collect::<Vec<_>>(),
                    ),
                    Column::new(
                        "id".into(),
                        (0..n)
                            .map(|i| format!("r{}", base + i as u64))
                            .collect::<Vec<_>>(),
                    ),
                    Column::new(
                        "cause".into(),
                        (0..n)
                            .map(|i| (i % 4 != 1).then(|| format!("c{}", i % 3)))
                            .collect::<Vec<_>>(),
                    ),
                ],
            )
            .unwrap()
        };
        // Row groups of 300 rows, of 128 and of 129 (polars heeds its
        // estimate of distinct values past 128 rows), of one, and of
        // text all missing.
        let mut df = chunk(0, 300);
        for (base, rows) in [(1_000, 128), (2_000, 129), (3_000, 1)] {
            df.vstack_mut(&chunk(base, rows)).unwrap();
        }
        let mut gaps = chunk(4_000, 20);
        gaps.with_column(Column::full_null("cause".into(), 20, &DataType::String))
            .unwrap();
        df.vstack_mut(&gaps).unwrap();
        assert_eq!(df.first_col_n_chunks(), 5);
        for compression in [
            ParquetCompression::Zstd(Some(polars_parquet::write::ZstdLevel::try_new(1).unwrap())),
            ParquetCompression::Uncompressed,
        ] {
            let bytes = |ours: bool| {
                let path = scratch(&format!("frame-{ours}"));
                let mut w = ParquetWriter::new(fs::File::create(&path).unwrap())
                    .with_compression(compression)
                    .set_parallel(false)
                    .batched(df.schema())
                    .unwrap();
                if ours {
                    write_frame(&mut w, &df, &mut PageCompressor::default()).unwrap();
                } else {
                    w.write_batch(&df).unwrap();
                }
                w.finish().unwrap();
                drop(w);
                let bytes = fs::read(&path).unwrap();
                fs::remove_file(&path).unwrap();
                bytes
            };
            assert!(bytes(true) == bytes(false), "{compression:?}");
        }
    }

    /// Writes `columns()` to `path` as two row groups of `rows` rows.
    fn write_twice(path: &PathBuf, rows: usize, columns: &dyn Fn() -> Vec<Encoded>) {
        let file = fs::File::create(path).unwrap();
        let mut w = ParquetWriter::new(file)
            .batched(&schema(&columns()))
            .unwrap();
        let mut compressor = PageCompressor::default();
        for _ in 0..2 {
            write_row_group(&mut w, rows, columns(), &mut compressor).unwrap();
        }
        w.finish().unwrap();
    }

    fn read(path: &PathBuf) -> DataFrame {
        ParquetReader::new(fs::File::open(path).unwrap())
            .finish()
            .unwrap()
    }

    /// What is written with chosen encodings reads back as the values
    /// and types the table declares: text as `String`, however encoded;
    /// nulls, extremes and wrapping differences kept; row groups in order.
    #[test]
    fn every_kind_of_column_reads_back_as_written() {
        let path = scratch("kinds");
        write(&path, vec![group(10), group(20)]);
        let df = read(&path);
        fs::remove_file(&path).unwrap();
        let expected = df!(
            "run_id" => vec!["c0ffee"; 10],
            "seed" => vec![42u64; 10],
            "request" => [13u64, 11, u64::MAX, 0, 10, 23, 21, u64::MAX, 0, 20],
            "attempt" => [1u32, 2, 1, 3, 1, 1, 2, 1, 3, 1],
            "hedge" => [false, true, false, false, true, false, true, false, false, true],
            "start_s" => [0.5, 1e-9, -0.0, 10.0, f64::MAX, 0.5, 1e-9, -0.0, 20.0, f64::MAX],
            "cost" => [Some(1.5), None, Some(0.0), None, None, Some(1.5), None, Some(0.0), None, None],
            "outcome" => ["timeout", "success", "timeout", "cancelled", "success",
                          "timeout", "success", "timeout", "cancelled", "success"],
        )
        .unwrap();
        assert_eq!(df.schema(), expected.schema());
        assert!(df.equals_missing(&expected), "{df}\n{expected}");
        // -0.0 equals 0.0: its sign must survive too.
        let start = df.column("start_s").unwrap().f64().unwrap().get(2).unwrap();
        assert!(start.is_sign_negative());
    }

    /// A column of floats all missing, made as such, is written byte for
    /// byte as the same absences given one by one.
    #[test]
    fn missing_floats_are_written_as_absences_one_by_one() {
        let bytes = |column: fn(usize) -> Encoded| {
            let path = scratch("missing");
            let schema = schema(&[column(0)]);
            let file = fs::File::create(&path).unwrap();
            let mut w = ParquetWriter::new(file).batched(&schema).unwrap();
            let mut compressor = PageCompressor::default();
            for rows in [3, 2000] {
                write_row_group(&mut w, rows, vec![column(rows)], &mut compressor).unwrap();
            }
            w.finish().unwrap();
            let b = fs::read(&path).unwrap();
            fs::remove_file(&path).unwrap();
            b
        };
        let made = bytes(|n| Encoded::missing_floats("cost", n));
        let given = bytes(|n| Encoded::optional_floats("cost", &vec![None; n]));
        assert_eq!(made, given);
    }

    /// A float column's Parquet type and the writer's options, pages cut
    /// at `page_size` bytes (polars' 1 MB when `None`).
    fn float_column(page_size: Option<usize>) -> (ParquetType, WriteOptions) {
        use polars_arrow::datatypes::{ArrowDataType, Field as ArrowField};
        use polars_parquet::write::StatisticsOptions;

        let field = ArrowField::new("t".into(), ArrowDataType::Float64, true);
        let type_ = polars_parquet::write::to_parquet_type(&field).unwrap();
        let options = WriteOptions {
            statistics: StatisticsOptions::full(),
            version: Version::V1,
            compression: CompressionOptions::Uncompressed,
            data_page_size: page_size,
        };
        (type_, options)
    }

    /// `values` as one plain page, as polars' writer encodes it.
    fn plain_page(values: &[f64]) -> Page {
        let array = PrimitiveArray::from_vec(values.to_vec()).boxed();
        let (type_, options) = float_column(None);
        let mut columns = array_to_columns(array, type_, options, &[Encoding::Plain]).unwrap();
        let page = columns.remove(0).next().unwrap().unwrap();
        assert!(
            matches!(page, Page::Data(_)),
            "a plain column has no dictionary page"
        );
        page
    }

    /// A float column's page holds the same levels, then byte `k` of
    /// every value in stream `k`, and says so in its header: what
    /// Parquet's readers expect of `BYTE_STREAM_SPLIT`.
    #[test]
    fn a_float_page_is_split_into_one_stream_per_byte() {
        let values = [1.5, -0.0, 1e300, 7.25, f64::MIN_POSITIVE];
        let plain = plain_page(&values);
        let Page::Data(plain_data) = &plain else {
            unreachable!("checked by plain_page")
        };
        let before = plain_data.buffer().to_vec();
        let Page::Data(split) = split_streams(plain).unwrap() else {
            panic!("a data page stays one")
        };
        assert_eq!(split.encoding(), Encoding::ByteStreamSplit);
        assert_eq!(split.num_values(), values.len());
        assert!(
            split.statistics().is_some(),
            "the plain page's statistics kept"
        );
        let buffer = split.buffer();
        let n = values.len();
        let levels = buffer.len() - 8 * n;
        assert_eq!(buffer[..levels], before[..levels], "levels unchanged");
        for (i, v) in values.iter().enumerate() {
            for (k, byte) in v.to_le_bytes().iter().enumerate() {
                assert_eq!(buffer[levels + k * n + i], *byte, "value {i}, byte {k}");
            }
        }
    }

    /// The pages made straight from a float column's values are the
    /// ones polars' plain pages give once split, header and statistics
    /// included, page for page: however many pages, with zeros of both
    /// signs (Parquet's rule for their statistics), with NaN (polars'
    /// own way), with one value.
    #[test]
    fn float_pages_made_from_the_values_are_polars_pages_split() {
        let lines: Vec<f64> = (0..3_000).map(|i| f64::from(i) * 0.37 - 400.0).collect();
        let mut zeros = lines.clone();
        zeros[17] = 0.0;
        zeros[1_800] = -0.0;
        let mut nan = lines.clone();
        nan[2_500] = f64::NAN;
        let only_zeros: Vec<f64> = (0..40)
            .map(|i| if i % 3 == 0 { -0.0 } else { 0.0 })
            .collect();
        let cases = [
            ("lines", lines.clone(), Some(1_000)),
            ("zeros", zeros, Some(1_000)),
            ("nan", nan, Some(1_000)),
            ("only zeros", only_zeros, None),
            ("one", vec![2.5], None),
            (
                "rows",
                (0..116_600).map(|i| f64::from(i).sqrt()).collect(),
                None,
            ),
        ];
        for (name, values, page_size) in cases {
            let (type_, options) = float_column(page_size);
            let array = PrimitiveArray::from_vec(values.clone()).boxed();
            let expected: Vec<Page> =
                array_to_columns(array, type_.clone(), options, &[Encoding::Plain])
                    .unwrap()
                    .remove(0)
                    .map(|page| split_streams(page.unwrap()).unwrap())
                    .collect();
            let got = split_pages(&values, &type_, options).unwrap();
            assert!(
                expected.len() > 1 || page_size.is_none(),
                "{name}: pages cut"
            );
            assert_eq!(got.len(), expected.len(), "{name}: pages");
            for (i, (got, expected)) in got.iter().zip(&expected).enumerate() {
                let (Page::Data(got), Page::Data(expected)) = (got, expected) else {
                    panic!("{name}: page {i} is not data")
                };
                assert_eq!(
                    format!("{:?}", got.header()),
                    format!("{:?}", expected.header()),
                    "{name}: page {i}'s header"
                );
                assert_eq!(got.num_values(), expected.num_values(), "{name}: page {i}");
                assert!(
                    got.buffer() == expected.buffer(),
                    "{name}: page {i}'s bytes"
                );
            }
        }
    }

    /// The streams are byte `k` of every value, in order, whatever the
    /// count (whole blocks of eight values and the rest).
    #[test]
    fn bytes_split_into_streams_in_order() {
        for n in [0usize, 1, 7, 8, 9, 16, 8 * 37 + 5] {
            let values: Vec<u8> = (0..n * 8).map(|i| (i * 131 % 251) as u8).collect();
            let mut split = vec![0u8; values.len()];
            split_bytes(&values, &mut split);
            assert_eq!(split.len(), values.len());
            for i in 0..n {
                for k in 0..8 {
                    assert_eq!(
                        split[k * n + i],
                        values[i * 8 + k],
                        "{n} values: value {i}, byte {k}"
                    );
                }
            }
        }
    }

    /// One zstd context kept for every page compresses each page to the
    /// bytes polars' compressor (a new context per page) gives it.
    #[test]
    fn pages_compress_to_the_bytes_polars_gives_them() {
        use polars_parquet::parquet::compression::{ZstdLevel, compress};

        let mut compressor = PageCompressor::default();
        for (level, shift) in [
            (Some(1), 0.0),
            (Some(1), 0.5),
            (None, 0.25),
            (Some(1), 0.75),
        ] {
            let options = CompressionOptions::Zstd(level.map(|l| ZstdLevel::try_new(l).unwrap()));
            let values: Vec<f64> = (0..20_000).map(|i| (f64::from(i) + shift).sqrt()).collect();
            let page = plain_page(&values);
            let Page::Data(data) = &page else {
                unreachable!("checked by plain_page")
            };
            let plain = data.buffer().to_vec();
            let mut expected = Vec::new();
            compress(options, &plain, &mut expected).unwrap();
            let CompressedPage::Data(mut got) = compressor.compress(page, options).unwrap() else {
                panic!("a data page stays one")
            };
            assert_eq!(got.uncompressed_size(), plain.len());
            assert_eq!(
                &got.slice_mut()[..],
                &expected[..],
                "level {level:?}, shift {shift}"
            );
        }
    }

    /// A byte-stream split page is compressed at `SPLIT_LEVEL` and the
    /// pages between at the writer's level, with the one context moved
    /// from level to level.
    #[test]
    fn split_pages_compress_at_their_own_level() {
        use polars_parquet::parquet::compression::{ZstdLevel, compress};

        let options = CompressionOptions::Zstd(Some(ZstdLevel::try_new(1).unwrap()));
        let mut compressor = PageCompressor::default();
        for round in 0..3 {
            let values: Vec<f64> = (0..20_000)
                .map(|i| (f64::from(i) + f64::from(round)).ln() * 1e3)
                .collect();
            let Page::Data(data) = split_streams(plain_page(&values)).unwrap() else {
                panic!("a data page stays one")
            };
            let split = data.buffer().to_vec();
            let CompressedPage::Data(mut got) =
                compressor.compress(Page::Data(data), options).unwrap()
            else {
                panic!("a data page stays one")
            };
            let expected = zstd::bulk::compress(&split, SPLIT_LEVEL).unwrap();
            assert_eq!(&got.slice_mut()[..], &expected[..], "round {round}, split");
            let at_one = zstd::bulk::compress(&split, 1).unwrap();
            assert_ne!(expected, at_one, "the levels differ on these bytes");

            let page = plain_page(&values);
            let Page::Data(plain) = &page else {
                unreachable!("checked by plain_page")
            };
            let mut expected = Vec::new();
            compress(options, plain.buffer(), &mut expected).unwrap();
            let CompressedPage::Data(mut got) = compressor.compress(page, options).unwrap() else {
                panic!("a data page stays one")
            };
            assert_eq!(&got.slice_mut()[..], &expected[..], "round {round}, plain");
        }
    }

    /// A float column longer than a page (the writer cuts pages at 1 MB)
    /// is split page by page and reads back value for value.
    #[test]
    fn a_float_column_of_many_pages_reads_back_as_written() {
        let path = scratch("pages");
        let rows = 400_000;
        let times: Vec<f64> = (0..rows).map(|i| i as f64 * 1.000_000_7e-4).collect();
        write_twice(&path, rows, &|| {
            vec![Encoded::floats("start_s", times.clone())]
        });
        let df = read(&path);
        fs::remove_file(&path).unwrap();
        let read: Vec<f64> = df
            .column("start_s")
            .unwrap()
            .f64()
            .unwrap()
            .into_no_null_iter()
            .collect();
        assert_eq!(read.len(), 2 * rows);
        assert!(read[..rows] == times[..] && read[rows..] == times[..]);
    }

    /// The text and constant columns are written as dictionaries (no
    /// string per row), the floats without: the choice is the column's,
    /// not a guess.
    #[test]
    fn text_is_a_dictionary_and_floats_are_not() {
        let path = scratch("encodings");
        write(&path, vec![group(0)]);
        let meta =
            polars_parquet::read::read_metadata(&mut fs::File::open(&path).unwrap()).unwrap();
        fs::remove_file(&path).unwrap();
        let dictionary: Vec<(String, bool)> = meta.row_groups[0]
            .parquet_columns()
            .iter()
            .map(|c| {
                let name = c.descriptor().path_in_schema[0].to_string();
                (name, c.dictionary_page_offset().is_some())
            })
            .collect();
        let with = |n: &str| dictionary.iter().find(|(c, _)| c == n).unwrap().1;
        for n in ["run_id", "seed", "outcome", "attempt"] {
            assert!(with(n), "{n}: {dictionary:?}");
        }
        for n in ["request", "start_s", "cost", "hedge"] {
            assert!(!with(n), "{n}: {dictionary:?}");
        }
    }

    /// Numbered names get their keys in the order first seen, one value
    /// each, whatever their number; a number past the names is `""`.
    #[test]
    fn numbered_names_are_keyed_by_their_number_in_the_order_seen() {
        let names: Vec<String> = (0..1000).map(|i| format!("a->n{i}")).collect();
        let mut keys = IndexedKeys::default();
        let mut edge = Dictionary::with_capacity(6);
        for i in [999, 3, 999, 5000, 3, 0] {
            edge.push_indexed(i, &names, &mut keys);
        }
        assert_eq!(edge.values, ["a->n999", "a->n3", "", "a->n0"]);
        assert_eq!(edge.keys, [0, 1, 0, 2, 1, 3]);
    }

    /// Keys with runs of every length around the encoder's thresholds
    /// (eight repeats, 8,192 packed values), from a fixed generator.
    fn keys_with_runs(n: usize, values: u32, seed: u64) -> Vec<u32> {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as u32
        };
        let mut keys = Vec::with_capacity(n);
        while keys.len() < n {
            let run = match next() % 8 {
                0..=3 => 1,
                4 => 7 + next() % 4,
                5 => 1 + next() % 30,
                6 => 8_190 + next() % 10,
                _ => 2,
            } as usize;
            let key = next() % values;
            keys.extend(std::iter::repeat_n(key, run.min(n - keys.len())));
        }
        keys
    }

    /// The keys are packed byte for byte as polars' encoder packs them,
    /// at every bit width, for runs long and short, leading zeros (the
    /// encoder's first `previous`) and packed runs cut at 8,192.
    #[test]
    fn keys_pack_as_polars_packs_them() {
        let mut cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![0],
            vec![3],
            vec![0; 8],
            vec![0; 9],
            vec![1; 9],
            [vec![2, 1, 2], vec![1; 8], vec![2]].concat(),
            [vec![5; 3], vec![6; 9], vec![5; 17]].concat(),
            (0..20_000).map(|i| i % 3).collect(),
        ];
        for (i, values) in [2u32, 3, 5, 16, 17, 300, 1 << 20].into_iter().enumerate() {
            cases.push(keys_with_runs(50_000, values, i as u64));
        }
        for keys in &cases {
            let most = keys.iter().max().copied().unwrap_or(0);
            for bits in [32 - most.leading_zeros(), 32 - most.leading_zeros() + 1] {
                let mut expected = Vec::new();
                hybrid_rle::encode::<u32, _, _>(&mut expected, keys.iter().copied(), bits).unwrap();
                let mut got = Vec::new();
                encode_keys(&mut got, keys, bits).unwrap();
                assert!(
                    got == expected,
                    "{} keys up to {most}, {bits} bits",
                    keys.len()
                );
            }
        }
    }

    /// Text and small integers whose keys are written here give the
    /// file polars writes from the whole column, byte for byte; integers
    /// polars would not make a dictionary of are left to it.
    #[test]
    fn keyed_columns_write_the_file_polars_writes() {
        let rows = 30_000;
        let names = [
            "success",
            "timeout",
            "server_error",
            "cancelled",
            "unavailable",
        ];
        let outcome_keys = keys_with_runs(rows, names.len() as u32, 7);
        let pods: Vec<u32> = keys_with_runs(rows, 40, 8).iter().map(|k| k + 3).collect();
        let wide: Vec<u32> = (0..rows as u32).map(|i| i * 7).collect();
        let ours = || {
            let mut outcome = Dictionary::with_capacity(rows);
            for &k in &outcome_keys {
                outcome.push(names[k as usize]);
            }
            vec![
                Encoded::text("outcome", outcome),
                Encoded::ints("pod", pods.clone()),
                Encoded::ints("wide", wide.clone()),
            ]
        };
        assert!(matches!(ours()[1].rows, Rows::Keys(_)));
        assert!(matches!(ours()[2].rows, Rows::All), "a range past 2^16");
        assert!(by_range((0..1000).collect()).is_err(), "all distinct");
        assert!(by_range(vec![]).is_err());
        let theirs = || {
            let mut outcome = Dictionary::with_capacity(rows);
            for &k in &outcome_keys {
                outcome.push(names[k as usize]);
            }
            let values = Utf8ViewArray::from_slice_values(&outcome.values);
            let keys = PrimitiveArray::from_vec(outcome.keys);
            let text = DictionaryArray::<u32>::try_from_keys(keys, values.boxed(), false).unwrap();
            let ints = |v: &Vec<u32>| PrimitiveArray::from_vec(v.clone()).boxed();
            let d = Encoding::RleDictionary;
            vec![
                Encoded::new("outcome", DataType::String, text.boxed(), d),
                Encoded::new("pod", DataType::UInt32, ints(&pods), d),
                Encoded::new("wide", DataType::UInt32, ints(&wide), d),
            ]
        };
        let bytes = |columns: &dyn Fn() -> Vec<Encoded>, name: &str| {
            let path = scratch(name);
            write_twice(&path, rows, columns);
            let bytes = fs::read(&path).unwrap();
            fs::remove_file(&path).unwrap();
            bytes
        };
        let (got, expected) = (bytes(&ours, "keyed"), bytes(&theirs, "whole"));
        assert!(
            got == expected,
            "{} bytes against {}",
            got.len(),
            expected.len()
        );
        let path = scratch("keyed-read");
        fs::write(&path, &got).unwrap();
        let df = read(&path);
        fs::remove_file(&path).unwrap();
        let outcome: Vec<&str> = outcome_keys.iter().map(|&k| names[k as usize]).collect();
        let expected = df!(
            "outcome" => [outcome.clone(), outcome].concat(),
            "pod" => [pods.clone(), pods.clone()].concat(),
            "wide" => [wide.clone(), wide.clone()].concat(),
        )
        .unwrap();
        assert!(df.equals_missing(&expected));
    }

    /// The error writing `column` as a row group of `rows` rows.
    fn refused(column: Encoded, rows: usize, name: &str) -> String {
        let path = scratch(name);
        let file = fs::File::create(&path).unwrap();
        let mut w = ParquetWriter::new(file)
            .batched(&schema(std::slice::from_ref(&column)))
            .unwrap();
        let err = write_row_group(&mut w, rows, vec![column], &mut PageCompressor::default());
        fs::remove_file(&path).unwrap();
        err.unwrap_err().to_string()
    }

    /// A key past its dictionary is refused, not written.
    #[test]
    fn a_key_past_the_dictionary_is_an_error() {
        let values = Utf8ViewArray::from_slice_values(["a", "b"]).boxed();
        let column = Encoded::keyed("t", DataType::String, values, vec![0, 2]);
        let err = refused(column, 2, "past");
        assert!(err.contains("past the dictionary"), "{err}");
    }

    /// Values too many for one page (polars would cut their keys in
    /// two) are refused rather than written twice.
    #[test]
    fn a_dictionary_past_one_page_is_an_error() {
        let names: Vec<String> = (0..300_000).map(|i| format!("n{i}")).collect();
        let values = Utf8ViewArray::from_slice_values(&names).boxed();
        let column = Encoded::keyed("t", DataType::String, values, vec![0, 299_999]);
        let err = refused(column, 2, "two-pages");
        assert!(err.contains("more than one page"), "{err}");
    }

    /// A table with no row at all still has its columns and types.
    #[test]
    fn an_empty_table_keeps_its_schema() {
        let path = scratch("empty");
        write(&path, vec![]);
        let df = read(&path);
        fs::remove_file(&path).unwrap();
        assert_eq!(df.height(), 0);
        assert_eq!(df.schema().as_ref(), &schema(&group(0).1));
    }
}
